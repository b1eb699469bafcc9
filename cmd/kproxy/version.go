package main

import "runtime/debug"

// kproxyVersion is the version of this build: the main module's version
// when built by `go install ...@version`, else "(devel)", with the VCS
// revision when the build recorded one. Journals record it.
func kproxyVersion() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "(unknown)"
	}
	v := bi.Main.Version
	if v == "" {
		v = "(devel)"
	}
	for _, s := range bi.Settings {
		if s.Key == "vcs.revision" && len(s.Value) >= 12 {
			v += " " + s.Value[:12]
		}
	}
	return v
}

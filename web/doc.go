// Package web is kproxy's web page: the list of consumer groups and each
// group's timeline drawn as lanes, served by the admin server from assets
// embedded in the binary, and the same page written as one self-contained
// HTML file for `kproxy replay --format html`. It reads a live
// timeline.Snapshot (served) or a timeline.Report (the file) and nothing
// else; nothing is fetched from the network at run time.
package web

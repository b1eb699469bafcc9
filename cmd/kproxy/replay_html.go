package main

import (
	"fmt"
	"io"
	"os"

	"github.com/kproxy-dev/kproxy/diagnose"
	"github.com/kproxy-dev/kproxy/timeline"
	"github.com/kproxy-dev/kproxy/web"
)

// wholeReport says whether replay's format is rendered from the whole
// report at the end (json, html) rather than streamed entry by entry.
func wholeReport(format string) bool { return format == "json" || format == "html" }

// pageErrors, for the html format, keeps the request errors of cfg's
// entries for the page (they are not in the report); nil otherwise.
func pageErrors(format string, cfg *timeline.Config) *web.RequestErrors {
	if format != "html" {
		return nil
	}
	errs := web.NewRequestErrors(0, 0)
	cfg.OnEntry = errs.Record
	return errs
}

// writeWholeReport renders rep as format: the JSON report, or the web page
// as one self-contained HTML file (style, script and data inline; it opens
// from disk with no network) with the request errors errs kept and the
// findings fs.
func writeWholeReport(w io.Writer, format string, rep *timeline.Report, errs *web.RequestErrors, fs []diagnose.Finding) error {
	if format == "html" {
		return web.WriteHTML(w, rep, errs, fs)
	}
	return timeline.WriteJSON(w, rep)
}

// replayOutput is where replay writes: stdout, or the file at path
// (--output), created with mode 0644 and replaced if it exists. done closes
// the file; it must be called once, its error kept.
func replayOutput(path string, stdout io.Writer) (w io.Writer, done func() error, err error) {
	if path == "" || path == "-" {
		return stdout, func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, nil, fmt.Errorf("replay: %w", err)
	}
	return f, f.Close, nil
}

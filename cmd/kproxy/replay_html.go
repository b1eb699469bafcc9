package main

import (
	"fmt"
	"io"
	"os"
	"time"

	"github.com/kproxy-dev/kproxy/diagnose"
	"github.com/kproxy-dev/kproxy/pipeline"
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

// pageDiagnosis, for the html format, is a diagnosis fed with cfg's
// entries (after what cfg.OnEntry already does) and, once added to the
// pipeline's decoded consumers (pageDecoded), with the exchanges, as
// runDiagnose runs it: the page shows its findings. nil otherwise.
func pageDiagnosis(format string, cfg *timeline.Config) *diagnose.Engine {
	if format != "html" {
		return nil
	}
	diag := diagnose.New(diagnose.Config{Groups: cfg.Groups})
	next := cfg.OnEntry
	cfg.OnEntry = func(en timeline.Entry) {
		if next != nil {
			next(en)
		}
		diag.Entry(en)
	}
	return diag
}

// pageDecoded is the pipeline's decoded consumers for diag: none when it
// is nil.
func pageDecoded(diag *diagnose.Engine) []pipeline.DecodedConsumer {
	if diag == nil {
		return nil
	}
	return []pipeline.DecodedConsumer{diag}
}

// pageFindings is diag's findings as of until for rep (nil when diag is).
func pageFindings(diag *diagnose.Engine, rep *timeline.Report, until time.Time) []diagnose.Finding {
	if diag == nil {
		return nil
	}
	diag.Advance(until)
	return diag.Findings(rep)
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

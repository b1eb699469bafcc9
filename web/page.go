package web

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"

	"github.com/kproxy-dev/kproxy/diagnose"
	"github.com/kproxy-dev/kproxy/timeline"
)

// fileData is what a self-contained page carries instead of polling the
// admin API: the list's rows and every group's view.
type fileData struct {
	Summaries []GroupRow  `json:"summaries"`
	Groups    []groupView `json:"groups"`
}

// shell is the page's HTML. With data nil it links the served assets;
// otherwise it inlines the style, the script and data (JSON, which
// encoding/json escapes so that it cannot close the script element).
func shell(data []byte) []byte {
	var b bytes.Buffer
	b.WriteString("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n" +
		"<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>kproxy</title>\n")
	if data == nil {
		b.WriteString("<link rel=\"stylesheet\" href=\"/assets/app.css\">\n<script src=\"/assets/app.js\" defer></script>\n")
	} else {
		b.WriteString("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; script-src 'unsafe-inline'; img-src data:\">\n")
		b.WriteString("<style>\n")
		b.Write(mustAsset("assets/app.css"))
		b.WriteString("</style>\n<script id=\"kproxy-data\" type=\"application/json\">")
		b.Write(data)
		b.WriteString("</script>\n<script>\n")
		b.Write(mustAsset("assets/app.js"))
		b.WriteString("</script>\n")
	}
	b.WriteString("</head>\n<body>\n<header><a class=\"home\" href=\"/\">kproxy</a> <span id=\"crumb\"></span><span id=\"status\"></span></header>\n<main id=\"app\"></main>\n</body>\n</html>\n")
	return b.Bytes()
}

func mustAsset(name string) []byte {
	b, err := assets.ReadFile(name)
	if err != nil {
		panic(fmt.Sprintf("web: embedded %s missing: %v", name, err)) // the build embeds it
	}
	return b
}

// WriteHTML writes r as one self-contained HTML page: the group list and
// every group's timeline with the request errors errs kept (nil: none),
// with style, script and data inline, that opens from disk with no
// network. fs are the diagnosis' findings, shown on their groups' pages
// (nil: no diagnosis, no findings panel).
func WriteHTML(w io.Writer, r *timeline.Report, errs *RequestErrors, fs []diagnose.Finding) error {
	h := &Handler{errs: errs}
	var counts map[string]diagnose.FindingCount
	if fs != nil {
		counts = diagnose.CountFindings(fs)
		byGroup := map[string][]diagnose.Finding{}
		for _, f := range fs {
			byGroup[f.Group] = append(byGroup[f.Group], f)
		}
		h.findings = func(group string) []diagnose.Finding { return byGroup[group] }
	}
	fd := fileData{Summaries: rows(Summaries(r), counts), Groups: make([]groupView, 0, len(r.Groups))}
	for i := range r.Groups {
		fd.Groups = append(fd.Groups, h.view(&r.Groups[i]))
	}
	data, err := json.Marshal(fd)
	if err != nil {
		return fmt.Errorf("web: encode report: %w", err)
	}
	if _, err := w.Write(shell(data)); err != nil {
		return fmt.Errorf("web: write page: %w", err)
	}
	return nil
}

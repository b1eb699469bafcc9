package diagnose

import (
	"encoding/json"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/kproxy-dev/kproxy/internal/printable"
)

// normalize sorts a finding's members and partitions, so that output
// never depends on the order facts were found in.
func normalize(f *Finding) {
	slices.SortFunc(f.Members, func(a, b Member) int { return strings.Compare(a.MemberID, b.MemberID) })
	f.Members = slices.CompactFunc(f.Members, func(a, b Member) bool { return a.MemberID == b.MemberID })
	for t, ps := range f.Partitions {
		slices.Sort(ps)
		f.Partitions[t] = slices.Compact(ps)
	}
}

// Document is the JSON form of a list of findings: {"findings": [...]}.
type Document struct {
	Findings []Finding `json:"findings"`
}

// WriteJSON writes fs as a Document, indented, ending in a newline.
func WriteJSON(w io.Writer, fs []Finding) error {
	if fs == nil {
		fs = []Finding{}
	}
	b, err := json.MarshalIndent(Document{Findings: fs}, "", "  ")
	if err != nil {
		return fmt.Errorf("diagnose: encode findings: %w", err)
	}
	if _, err := w.Write(append(b, '\n')); err != nil {
		return fmt.Errorf("diagnose: write findings: %w", err)
	}
	return nil
}

// WriteText writes fs for people: per finding, a headline, the members,
// the partitions, the evidence, the explanation and the suggestion.
func WriteText(w io.Writer, fs []Finding) error {
	var b strings.Builder
	if len(fs) == 0 {
		b.WriteString("no findings\n")
	}
	for i, f := range fs {
		if i > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(TextBlock(f))
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("diagnose: write findings: %w", err)
	}
	return nil
}

// TextBlock is one finding in the text form, lines ending in newlines.
func TextBlock(f Finding) string {
	// Ids, names and the sentences that quote them are the clients'
	// choice: escaped (printable), so that none starts a line of its own.
	p := printable.String
	var b strings.Builder
	fmt.Fprintf(&b, "%s %s %s [%s]\n", f.At, p(f.Group), f.Kind, f.Severity)
	for _, m := range f.Members {
		fmt.Fprintf(&b, "  member %s client %s", p(m.MemberID), p(orDash(m.ClientID)))
		if m.InstanceID != "" {
			fmt.Fprintf(&b, " instance %s", p(m.InstanceID))
		}
		fmt.Fprintf(&b, " %s", p(orDash(m.ClientAddr)))
		if m.SoftwareName != "" || m.SoftwareVersion != "" {
			fmt.Fprintf(&b, " software %s %s", p(orDash(m.SoftwareName)), p(orDash(m.SoftwareVersion)))
		}
		if m.Rack != "" {
			fmt.Fprintf(&b, " rack %s", p(m.Rack))
		}
		if m.ClientCert != "" {
			fmt.Fprintf(&b, " cert %q", m.ClientCert)
		}
		b.WriteByte('\n')
	}
	for _, t := range sortedKeys(f.Partitions) {
		fmt.Fprintf(&b, "  partitions %s%v\n", p(t), f.Partitions[t])
	}
	for _, k := range sortedKeys(f.Evidence) {
		v, _ := json.Marshal(f.Evidence[k])
		fmt.Fprintf(&b, "  %s: %s\n", k, v)
	}
	fmt.Fprintf(&b, "  why: %s\n  fix: %s\n", p(f.Explanation), p(f.Suggestion))
	for _, l := range f.Links {
		fmt.Fprintf(&b, "  see: %s\n", l)
	}
	return b.String()
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

package timeline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// WriteJSON writes r as one indented JSON document. The same report always
// gives the same bytes: slices are sorted by the engine and map keys by
// encoding/json.
func WriteJSON(w io.Writer, r *Report) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("timeline: encode report: %w", err)
	}
	_, err := w.Write(buf.Bytes())
	return err
}

// entryJSON is the JSONL form of an Entry. Keys are snake_case, like every
// kproxy log line.
type entryJSON struct {
	At         string         `json:"at"`
	Group      string         `json:"group"`
	Kind       Kind           `json:"kind"`
	Generation int32          `json:"generation,omitempty"`
	MemberID   string         `json:"member_id,omitempty"`
	Text       string         `json:"text"`
	Detail     []string       `json:"detail,omitempty"`
	Fields     map[string]any `json:"fields,omitempty"`
}

// WriteEntryJSONL writes an entry as one line of JSON.
func WriteEntryJSONL(w io.Writer, e Entry) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	err := enc.Encode(entryJSON{At: stamp(e.At), Group: e.Group, Kind: e.Kind, Generation: e.Generation,
		MemberID: e.Member, Text: e.Text, Detail: e.Detail, Fields: e.Fields})
	if err != nil {
		return fmt.Errorf("timeline: encode entry: %w", err)
	}
	_, err = w.Write(buf.Bytes())
	return err
}

package timeline

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
)

// WriteJSON writes r as one JSON document, indented for people with arrays
// of plain values (partition lists) kept on one line. The same report
// always gives the same bytes: slices are ordered by the engine and map
// keys sorted by encoding/json.
func WriteJSON(w io.Writer, r *Report) error {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("timeline: encode report: %w", err)
	}
	if _, err := w.Write(indent(bytes.TrimSpace(buf.Bytes()))); err != nil {
		return fmt.Errorf("timeline: write report: %w", err)
	}
	return nil
}

// indent pretty-prints compact JSON with two spaces, printing an array
// that holds no object or array inline: "[0, 1, 2]".
func indent(src []byte) []byte {
	out := make([]byte, 0, len(src)*2)
	depth := 0
	newline := func() {
		out = append(out, '\n')
		for i := 0; i < depth; i++ {
			out = append(out, ' ', ' ')
		}
	}
	for i := 0; i < len(src); i++ {
		c := src[i]
		switch c {
		case '"':
			j := skipString(src, i)
			out = append(out, src[i:j]...)
			i = j - 1
		case '{', '[':
			if c == '[' {
				if end, flat := flatArray(src, i); flat {
					out = appendFlat(out, src[i:end+1])
					i = end
					continue
				}
			}
			if i+1 < len(src) && (src[i+1] == '}' || src[i+1] == ']') {
				out = append(out, c, src[i+1])
				i++
				continue
			}
			out = append(out, c)
			depth++
			newline()
		case '}', ']':
			depth--
			newline()
			out = append(out, c)
		case ',':
			out = append(out, c)
			newline()
		case ':':
			out = append(out, ':', ' ')
		default:
			out = append(out, c)
		}
	}
	return append(out, '\n')
}

// skipString returns the index just past the JSON string starting at i.
func skipString(src []byte, i int) int {
	for j := i + 1; j < len(src); j++ {
		switch src[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(src)
}

// flatArray reports whether the array at i holds no object or array, and
// where it ends.
func flatArray(src []byte, i int) (int, bool) {
	for j := i + 1; j < len(src); j++ {
		switch src[j] {
		case '"':
			j = skipString(src, j) - 1
		case '{', '[':
			return 0, false
		case ']':
			return j, true
		}
	}
	return 0, false
}

// appendFlat appends a flat array with a space after each comma.
func appendFlat(out, arr []byte) []byte {
	for i := 0; i < len(arr); i++ {
		if arr[i] == '"' {
			j := skipString(arr, i)
			out = append(out, arr[i:j]...)
			i = j - 1
			continue
		}
		out = append(out, arr[i])
		if arr[i] == ',' {
			out = append(out, ' ')
		}
	}
	return out
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
	if _, err := w.Write(buf.Bytes()); err != nil {
		return fmt.Errorf("timeline: write entry: %w", err)
	}
	return nil
}

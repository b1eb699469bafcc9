package timeline

import (
	"reflect"
	"testing"
	"time"
)

// TestFrozenViewRoundTrip fills every field of a GenerationView but its
// suspects (which a frozen generation keeps apart) by reflection, so that
// a field added to a view without its place in appendView and decodeView
// fails here, whatever the synth mix fills. nil and empty lists and maps
// stay apart, as they do in JSON, and client-chosen ids that are not
// valid UTF-8 come back as the live view has them.
func TestFrozenViewRoundTrip(t *testing.T) {
	var full GenerationView
	fill(t, reflect.ValueOf(&full).Elem())
	full.Suspects = nil
	empty := GenerationView{Members: []GenerationMember{{Subscription: []string{}, Assignment: map[string][]int32{"t": {}}}}, Departed: []DepartureView{}, Unassigned: map[string][]int32{}}
	invalid := GenerationView{Leader: "c\xff-1", Members: []GenerationMember{{MemberID: "c\xff-1", Assignment: map[string][]int32{"t\xfe": {0}}}}}
	for name, v := range map[string]GenerationView{"full": full, "empty": empty, "zero": {}, "not UTF-8": invalid} {
		t.Run(name, func(t *testing.T) {
			got, err := decodeView(appendView(nil, &v))
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, v) {
				t.Errorf("decoded\n%+v\nwant\n%+v", got, v)
			}
		})
	}
	b := appendView(nil, &full)
	if _, err := decodeView(b[:len(b)-1]); err == nil {
		t.Error("a view cut short decoded without an error")
	}
}

// fill sets v, and every field, item and entry under it, to a value that
// is not its zero; each string differs, so fields read in the wrong order
// fail.
func fill(t *testing.T, v reflect.Value) {
	t.Helper()
	n := 0
	var set func(v reflect.Value)
	set = func(v reflect.Value) {
		n++
		if v.Type() == reflect.TypeFor[time.Time]() {
			v.Set(reflect.ValueOf(time.Unix(1_700_000_000+int64(n), int64(n)).UTC()))
			return
		}
		switch v.Kind() {
		case reflect.String:
			v.SetString("s" + string(rune('a'+n%26)) + string(rune('a'+n/26%26)))
		case reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64, reflect.Int:
			v.SetInt(int64(n))
		case reflect.Bool:
			v.SetBool(true)
		case reflect.Struct:
			for i := range v.NumField() {
				set(v.Field(i))
			}
		case reflect.Slice:
			v.Set(reflect.MakeSlice(v.Type(), 2, 2))
			set(v.Index(0))
			set(v.Index(1))
		case reflect.Map:
			v.Set(reflect.MakeMap(v.Type()))
			k, e := reflect.New(v.Type().Key()).Elem(), reflect.New(v.Type().Elem()).Elem()
			set(k)
			set(e)
			v.SetMapIndex(k, e)
		default:
			t.Fatalf("fill: a %s field: teach fill and appendView its kind", v.Type())
		}
	}
	set(v)
}

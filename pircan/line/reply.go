package line

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"unicode/utf8"
)

// KV is one field of an Obj.
type KV struct {
	Key string
	// Value is a string, bool, int, int64, nil, []string, Obj or []Obj.
	Value any
}

// Obj is a JSON object whose fields keep their order. String values (and
// the strings of []string values, at any depth) are what Fit may cut.
type Obj []KV

// MarshalJSON writes the object in field order, with no HTML escaping.
func (o Obj) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	if err := o.write(&b); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

func (o Obj) write(b *bytes.Buffer) error {
	b.WriteByte('{')
	for i, kv := range o {
		if i > 0 {
			b.WriteByte(',')
		}
		writeString(b, kv.Key)
		b.WriteByte(':')
		if err := writeValue(b, kv.Value); err != nil {
			return err
		}
	}
	b.WriteByte('}')
	return nil
}

func writeValue(b *bytes.Buffer, v any) error {
	switch v := v.(type) {
	case nil:
		b.WriteString("null")
	case string:
		writeString(b, v)
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case int:
		b.WriteString(strconv.Itoa(v))
	case int64:
		b.WriteString(strconv.FormatInt(v, 10))
	case []string:
		b.WriteByte('[')
		for i, s := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			writeString(b, s)
		}
		b.WriteByte(']')
	case Obj:
		return v.write(b)
	case []Obj:
		b.WriteByte('[')
		for i, o := range v {
			if i > 0 {
				b.WriteByte(',')
			}
			if err := o.write(b); err != nil {
				return err
			}
		}
		b.WriteByte(']')
	default:
		return errors.New("line: unsupported value type")
	}
	return nil
}

// writeString writes s as a JSON string: invalid UTF-8 becomes U+FFFD,
// control characters, '"' and '\\' are escaped (so no CR, LF or NUL is
// ever written raw), as are U+2028 and U+2029.
func writeString(b *bytes.Buffer, s string) {
	const hex = "0123456789abcdef"
	b.WriteByte('"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		i += size
		switch {
		case r == utf8.RuneError && size == 1:
			b.WriteString(`\ufffd`)
		case r == '"':
			b.WriteString(`\"`)
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f || r == 0x2028 || r == 0x2029:
			b.WriteString(`\u`)
			b.WriteByte(hex[r>>12&0xf])
			b.WriteByte(hex[r>>8&0xf])
			b.WriteByte(hex[r>>4&0xf])
			b.WriteByte(hex[r&0xf])
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
}

// ErrCannotFit: the reply does not fit even with every string emptied and
// every list shortened to nothing (a verb with too many fixed fields).
var ErrCannotFit = errors.New("line: reply cannot fit in one line")

// Format returns the reply line `PIRCAN/1 <verb> <json>` with at most
// MaxReplyBytes bytes. See Fit.
func Format(verb string, o Obj) (string, error) { return Fit(verb, o, MaxReplyBytes) }

// Fit returns `PIRCAN/1 <verb> <json>` in at most limit bytes. When the
// object is too long it appends "truncated": true and cuts the longest
// string value (never a key, never inside a UTF-8 sequence; never "re",
// "code", "verb" or an identifier, a key ending in "_id"), again and
// again, until the line fits; when every string is empty it drops the last
// items of the longest list. The JSON is always whole and valid. o is not
// modified.
func Fit(verb string, o Obj, limit int) (string, error) {
	_, line, err := fit(Prefix+" "+verb+" ", o, limit)
	return line, err
}

// fit is Fit, also returning the object as fitted (o itself when it fit).
func fit(head string, o Obj, limit int) (Obj, string, error) {
	line, err := render(head, o)
	if err != nil {
		return nil, "", err
	}
	if len(line) <= limit {
		return o, line, nil
	}
	o = append(clone(o), KV{"truncated", true})
	for {
		line, err = render(head, o)
		if err != nil {
			return nil, "", err
		}
		excess := len(line) - limit
		if excess <= 0 {
			return o, line, nil
		}
		if !cutLongest(o, excess) && !dropLast(o) {
			return nil, "", ErrCannotFit
		}
	}
}

func render(head string, o Obj) (string, error) {
	var b bytes.Buffer
	b.WriteString(head)
	if err := o.write(&b); err != nil {
		return "", err
	}
	return b.String(), nil
}

// clone deep-copies the parts Fit changes (strings live in slices and Objs).
func clone(o Obj) Obj {
	c := make(Obj, len(o))
	for i, kv := range o {
		switch v := kv.Value.(type) {
		case []string:
			kv.Value = append([]string(nil), v...)
		case Obj:
			kv.Value = clone(v)
		case []Obj:
			objs := make([]Obj, len(v))
			for j := range v {
				objs[j] = clone(v[j])
			}
			kv.Value = objs
		}
		c[i] = kv
	}
	return c
}

// cutLongest shortens the longest string value by whole runes until its
// JSON form is at least excess bytes shorter (or it is empty).
// It reports false when every string is already empty.
func cutLongest(o Obj, excess int) bool {
	best, set := "", func(string) {}
	found := false
	visitStrings(o, func(v string, setv func(string)) {
		if !found || len(v) > len(best) {
			best, set, found = v, setv, true
		}
	})
	if !found || best == "" {
		return false
	}
	// Remove whole runes from the end until their JSON form (escapes
	// included) covers the excess.
	n, cut := len(best), 0
	var b bytes.Buffer
	for n > 0 && cut < excess {
		_, size := utf8.DecodeLastRuneInString(best[:n])
		b.Reset()
		writeString(&b, best[n-size:n])
		cut += b.Len() - 2 // without the quotes
		n -= size
	}
	set(best[:n])
	return true
}

// keep names the fields Fit never cuts: correlation and codes; and
// identifiers, any key ending in "_id" (agent_id, message_id, ...).
var keep = map[string]bool{"re": true, "code": true, "verb": true}

func kept(key string) bool { return keep[key] || strings.HasSuffix(key, "_id") }

// visitStrings calls f with every cuttable string of o and a setter for it.
func visitStrings(o Obj, f func(string, func(string))) {
	for i := range o {
		if kept(o[i].Key) {
			continue
		}
		switch v := o[i].Value.(type) {
		case string:
			f(v, func(s string) { o[i].Value = s })
		case []string:
			for j := range v {
				f(v[j], func(s string) { v[j] = s })
			}
		case Obj:
			visitStrings(v, f)
		case []Obj:
			for j := range v {
				visitStrings(v[j], f)
			}
		}
	}
}

// dropLast removes the last item of the longest list; false when every list
// is empty.
func dropLast(o Obj) bool {
	best, bestLen := -1, 0
	for i, kv := range o {
		n := 0
		switch v := kv.Value.(type) {
		case []string:
			n = len(v)
		case []Obj:
			n = len(v)
		}
		if n > bestLen {
			best, bestLen = i, n
		}
	}
	if best < 0 {
		return false
	}
	switch v := o[best].Value.(type) {
	case []string:
		o[best].Value = v[:len(v)-1]
	case []Obj:
		o[best].Value = v[:len(v)-1]
	}
	return true
}

// ErrorReply formats the ERROR reply of e: verb, code, message and "re"
// when the request had an id.
func ErrorReply(e *Error) string {
	o := Obj{}
	if e.Verb != "" {
		o = append(o, KV{"verb", e.Verb})
	}
	o = append(o, KV{"code", e.Code}, KV{"message", e.Message})
	if e.Re != "" {
		o = append(o, KV{"re", e.Re})
	}
	s, err := Format("ERROR", o)
	if err != nil { // cannot happen: every string can be cut to nothing
		return Prefix + ` ERROR {"code":"internal_error","message":""}`
	}
	return s
}

// Valid reports whether s is one reply line the codec could have made: a
// prefix, a verb and one valid JSON object, within limit bytes, with no CR,
// LF or NUL. Tests and the fuzzer use it.
func Valid(s string, limit int) bool {
	if len(s) > limit || bytes.ContainsAny([]byte(s), "\r\n\x00") || !utf8.ValidString(s) {
		return false
	}
	rest, ok := bytes.CutPrefix([]byte(s), []byte(Prefix+" "))
	if !ok {
		return false
	}
	_, obj, ok := bytes.Cut(rest, []byte(" "))
	if !ok || len(obj) == 0 || obj[0] != '{' {
		return false
	}
	var m map[string]any
	return json.Unmarshal(obj, &m) == nil
}

// Split formats a reply whose textKey string may be longer than one line
// holds, so that no text is lost: when the object fits in limit bytes it
// is one line, as Format makes it. Otherwise the first line carries
// "more": true and as much of the text as fits (the other strings cut as
// Fit cuts them), and lines `PIRCAN/1 <verb>-MORE {idKey, textKey, re}`
// follow with the next parts, each with "more": true but the last; the
// text values of all the lines joined in order are the whole text (PIRCAN.md
// "Whole texts on IRC"). o must hold idKey and textKey as strings; "re", when
// o has it, is repeated on every line.
func Split(verb string, o Obj, idKey, textKey string, limit int) ([]string, error) {
	whole, err := render(Prefix+" "+verb+" ", o)
	if err != nil {
		return nil, err
	}
	if len(whole) <= limit {
		return []string{whole}, nil
	}
	var id, text, re string
	var hasRe bool
	first := clone(o)
	ti := -1
	for i, kv := range first {
		switch kv.Key {
		case idKey:
			id, _ = kv.Value.(string)
		case textKey:
			text, _ = kv.Value.(string)
			ti = i
		case "re":
			re, hasRe = kv.Value.(string)
		}
	}
	if ti < 0 || text == "" {
		s, err := Fit(verb, o, limit)
		return []string{s}, err
	}
	// The first line: everything but the text, fitted, then the text's
	// head in the room left.
	first[ti].Value = ""
	first = append(first, KV{"more", true})
	head := Prefix + " " + verb + " "
	fitted, base, err := fit(head, first, limit)
	if err != nil {
		return nil, err
	}
	part, rest := takeFitting(text, limit-len(base))
	if part != "" {
		fitted[ti].Value = part
		if base, err = render(head, fitted); err != nil {
			return nil, err
		}
	}
	lines := []string{base}
	for rest != "" {
		cont := Obj{{idKey, id}, {textKey, ""}}
		if hasRe {
			cont = append(cont, KV{"re", re})
		}
		cont = append(cont, KV{"more", true})
		empty, err := render(Prefix+" "+verb+"-MORE ", cont)
		if err != nil {
			return nil, err
		}
		var part string
		part, rest = takeFitting(rest, limit-len(empty))
		if part == "" {
			return nil, ErrCannotFit
		}
		cont[1].Value = part
		if rest == "" {
			cont = cont[:len(cont)-1]
		}
		s, err := render(Prefix+" "+verb+"-MORE ", cont)
		if err != nil {
			return nil, err
		}
		lines = append(lines, s)
	}
	return lines, nil
}

// takeFitting splits s after the most whole runes whose JSON form fits in
// room bytes.
func takeFitting(s string, room int) (head, rest string) {
	var b bytes.Buffer
	n, used := 0, 0
	for n < len(s) {
		_, size := utf8.DecodeRuneInString(s[n:])
		b.Reset()
		writeString(&b, s[n:n+size])
		w := b.Len() - 2
		if used+w > room {
			break
		}
		used += w
		n += size
	}
	return s[:n], s[n:]
}

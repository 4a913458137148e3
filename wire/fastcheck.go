package wire

import "bytes"

// fastCheck is checkStructure's fast path for the common frame: one pass
// over the bytes, no allocation. It checks that the top level is an object,
// the depth, trailing data and duplicate keys per object (ASCII keys compare
// case-insensitively, which is foldKey's relation on ASCII). It leaves value
// syntax to json.Unmarshal, which always runs after it. handled is false when
// it meets anything it does not decide on its own (a key with an escape or a
// non-ASCII byte, broken structure); checkStructure then decides.
func fastCheck(data []byte) (handled bool, e *Error) {
	type level struct {
		object    bool
		expectKey bool
		keys      [][]byte // raw key bytes seen in this object
	}
	var stack [MaxDepth + 1]level
	// The top level's keys live in a fixed array, apart from stack (a
	// slice stored through a pointer into stack would move it to the heap):
	// a frame's few members allocate nothing (more than 16, or nested
	// objects' keys, grow on the heap).
	var topKeys [16][]byte
	top := topKeys[:0]
	depth := 0
	i := skipSpace(data, 0)
	if i >= len(data) || data[i] != '{' {
		return false, nil
	}
	for ; i < len(data); i++ {
		switch c := data[i]; c {
		case ' ', '\t', '\n', '\r':
		case '{', '[':
			if depth >= MaxDepth {
				return true, Errorf(CodeInvalidJSON, "JSON nests deeper than %d levels", MaxDepth)
			}
			if depth > 0 && stack[depth-1].object {
				stack[depth-1].expectKey = false
			}
			stack[depth] = level{object: c == '{', expectKey: c == '{', keys: stack[depth].keys[:0]}
			depth++
		case '}', ']':
			if depth == 0 || stack[depth-1].object != (c == '}') {
				return false, nil
			}
			depth--
			if depth == 0 {
				if j := skipSpace(data, i+1); j != len(data) {
					return true, Errorf(CodeInvalidJSON, "trailing data after the JSON object")
				}
				return true, nil
			}
		case ',':
			if depth > 0 && stack[depth-1].object {
				stack[depth-1].expectKey = true
			}
		case ':':
			if depth > 0 && stack[depth-1].object {
				stack[depth-1].expectKey = false
			}
		case '"':
			end := i + 1
			for ; end < len(data) && data[end] != '"'; end++ {
				if data[end] == '\\' {
					if depth > 0 && stack[depth-1].object && stack[depth-1].expectKey {
						return false, nil // an escaped key: let the decoder unescape it
					}
					end++
				}
			}
			if end >= len(data) {
				return false, nil
			}
			if depth == 0 {
				return false, nil
			}
			if l := &stack[depth-1]; l.object && l.expectKey {
				key := data[i+1 : end]
				for _, b := range key {
					if b >= 0x80 {
						return false, nil // non-ASCII: Unicode folding is the slow path's
					}
				}
				seen := l.keys
				if depth == 1 {
					seen = top
				}
				for _, k := range seen {
					if bytes.EqualFold(k, key) {
						return true, Errorf(CodeInvalidJSON, "duplicated key %q", key)
					}
				}
				if depth == 1 {
					top = append(top, key)
				} else {
					l.keys = append(l.keys, key)
				}
				l.expectKey = false
			}
			i = end
		}
	}
	return false, nil
}

func skipSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

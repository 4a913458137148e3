package arena

import (
	"encoding/json"
	"testing"
)

// TestWithAmount: only the amount moves; every other key stays as it was.
func TestWithAmount(t *testing.T) {
	for _, c := range []struct {
		in    string
		cents int64
		want  string
	}{
		{`{"amount_usd":3000,"category":"primary_slot","sends":2}`, 342500, `{"amount_usd":3425,"category":"primary_slot","sends":2}`},
		{`{"amount_usd":1,"x_placement":{"slot":"top"}}`, 1050, `{"amount_usd":10.5,"x_placement":{"slot":"top"}}`},
		{``, 100000, `{"amount_usd":1000}`},
		{`"not an object"`, 100, `{"amount_usd":1}`},
	} {
		got := WithAmount(json.RawMessage(c.in), c.cents)
		var g, w any
		if json.Unmarshal(got, &g) != nil || json.Unmarshal([]byte(c.want), &w) != nil || string(mustJSON(g)) != string(mustJSON(w)) {
			t.Errorf("WithAmount(%s, %d) = %s, want %s", c.in, c.cents, got, c.want)
		}
	}
}

func mustJSON(v any) []byte {
	b, _ := json.Marshal(v)
	return b
}

// FuzzWithAmount: whatever the terms, the result is a JSON object whose
// amount is the one asked.
func FuzzWithAmount(f *testing.F) {
	f.Add([]byte(`{"amount_usd":3000,"category":"primary_slot"}`), int64(12345))
	f.Fuzz(func(t *testing.T, terms []byte, cents int64) {
		cents = min(max(cents, 0), 1_000_000_000_00)
		var m map[string]json.RawMessage
		if err := json.Unmarshal(WithAmount(terms, cents), &m); err != nil {
			t.Fatalf("not an object: %v", err)
		}
		var got float64
		if json.Unmarshal(m["amount_usd"], &got) != nil || int64(got*100+0.5) != cents {
			t.Fatalf("amount %s, want %d cents", m["amount_usd"], cents)
		}
	})
}

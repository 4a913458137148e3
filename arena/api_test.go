package arena

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/venuehq/venue/bus"
	"github.com/venuehq/venue/internal/httpapi"
	"github.com/venuehq/venue/store"
	"github.com/venuehq/venue/store/memory"
	"github.com/venuehq/venue/wire"
)

func testAPI(t testing.TB) http.Handler {
	t.Helper()
	f := NewFeed(bus.NewLocal(), nil)
	t.Cleanup(f.Close)
	e := httpapi.New(nil, slog.Default())
	NewAPI(APIConfig{Store: memory.New(), Feed: f,
		Authenticate: func(*http.Request) (store.Agent, error) {
			return store.Agent{}, wire.Errorf(wire.CodeUnauthorized, "no key")
		}}).Mount(e)
	return e
}

// FuzzListQuery: whatever the query string, the listing answers 200 with
// the listing's shape or 422 invalid_argument; never anything else.
func FuzzListQuery(f *testing.F) {
	for _, q := range []string{"", "status=live", "status=ended&limit=100&offset=0", "limit=0", "limit=-1", "offset=99999999999",
		"status=%00", "limit=1e3", "status=live&status=deal", "limit=+5", "offset=0x10"} {
		f.Add(q)
	}
	h := testAPI(f)
	f.Fuzz(func(t *testing.T, q string) {
		r := httptest.NewRequest("GET", "/v1/arena/negotiations", nil)
		r.URL.RawQuery = q
		w := httptest.NewRecorder()
		h.ServeHTTP(w, r)
		var body map[string]json.RawMessage
		if err := json.Unmarshal(w.Body.Bytes(), &body); err != nil {
			t.Fatalf("%q: body %q", q, w.Body.String())
		}
		switch w.Code {
		case 200:
			if _, ok := body["items"]; !ok {
				t.Fatalf("%q: 200 without items: %s", q, w.Body.String())
			}
		case 422:
			var e struct{ Error wire.Error }
			if json.Unmarshal(w.Body.Bytes(), &e) != nil || e.Error.Code != wire.CodeInvalidArgument {
				t.Fatalf("%q: %s", q, w.Body.String())
			}
		default:
			t.Fatalf("%q: status %d %s", q, w.Code, w.Body.String())
		}
	})
}

package venue

import (
	"encoding/json"
	"net/http"

	"github.com/labstack/echo/v4"

	docs "github.com/venuehq/venue"
	"github.com/venuehq/venue/spectate"
	"github.com/venuehq/venue/web"
)

// mountPages adds the transcript as JSON Lines and the documents as pages
// (PROTOCOL.md "Pages").
func (s *Server) mountPages(e *echo.Echo) error {
	e.GET("/v1/negotiations/:id/transcript.jsonl", s.handleTranscriptJSONL)
	e.GET("/v1/negotiations/:id/watchers", s.handleWatchers)
	h, err := web.Docs(map[string]string{"PROTOCOL": docs.Protocol, "DELEGATION": docs.Delegation, "PIRCAN": docs.Pircan})
	if err != nil {
		return err
	}
	e.GET("/docs/:name", echo.WrapHandler(h))
	return nil
}

// handleTranscriptJSONL is GET /v1/negotiations/:id/transcript.jsonl: the
// transcript as JSON Lines (application/jsonl), one entry
// {"seq","frame","hash"} a line in seq order, each checkable on its own
// against the chain (PROTOCOL.md "Transcript, offer hash and chain hash").
// Public like the transcript; private frames are never in it.
func (s *Server) handleTranscriptJSONL(c echo.Context) error {
	st, err := s.negotiation(c)
	if err != nil {
		return err
	}
	entries, err := s.store.Transcript(c.Request().Context(), st.ID, 0)
	if err != nil {
		return err
	}
	if cut, ok := s.spectatorCutoff(c, &st); ok {
		entries = spectate.Entries(entries, cut)
	}
	w := c.Response()
	w.Header().Set("Content-Type", "application/jsonl; charset=utf-8")
	w.WriteHeader(http.StatusOK)
	enc := json.NewEncoder(w)
	for _, e := range entries {
		if err := enc.Encode(e); err != nil {
			return nil // the client went away
		}
	}
	return nil
}

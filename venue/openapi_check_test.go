package venue_test

// Every REST call the tests of this package make goes through apiClient,
// which checks the request and the answer against the OpenAPI document the
// venue serves (venue.OpenAPI, PROTOCOL.md "REST"): an answer whose status
// the document does not list for that route, or whose body does not match
// the listed schema, fails the test; so does a request the document calls
// invalid that the venue nevertheless took (a status below 400). A route the
// document does not have must be one the venue does not serve either (404 or
// 405 with the error body). The document cannot drift from the code without
// a test noticing.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/getkin/kin-openapi/openapi3"
	"github.com/getkin/kin-openapi/openapi3filter"
	"github.com/getkin/kin-openapi/routers"
	"github.com/getkin/kin-openapi/routers/gorillamux"

	"github.com/venuehq/venue/venue"
)

// apiSpec is the loaded document and its router, built once.
type apiSpec struct {
	doc    *openapi3.T
	router routers.Router
}

var (
	apiOnce sync.Once
	apiDoc  *apiSpec
	apiErr  error
)

// loadAPISpec loads and validates venue.OpenAPI() (OpenAPI 3.1).
func loadAPISpec() (*apiSpec, error) {
	apiOnce.Do(func() {
		ctx := context.Background()
		// The owner portal's page, style and script are text like
		// text/plain: their schema is a string; so is a compact JWS
		// (application/jose, a deal's evidence).
		for _, ct := range []string{"text/html", "text/css", "text/javascript", "application/jsonl", "application/jose"} {
			openapi3filter.RegisterBodyDecoder(ct, openapi3filter.PlainBodyDecoder)
		}
		doc, err := openapi3.NewLoader().LoadFromData(venue.OpenAPI())
		if err != nil {
			apiErr = fmt.Errorf("load openapi.json: %w", err)
			return
		}
		if err := doc.Validate(ctx); err != nil {
			apiErr = fmt.Errorf("validate openapi.json: %w", err)
			return
		}
		// The document names no server: the router takes any host, as the
		// tests' venues listen on random ports.
		doc.Servers = nil
		r, err := gorillamux.NewRouter(doc)
		if err != nil {
			apiErr = fmt.Errorf("router of openapi.json: %w", err)
			return
		}
		apiDoc = &apiSpec{doc: doc, router: r}
	})
	return apiDoc, apiErr
}

// authenticate checks what the document's security schemes ask for is
// there: a bearer Authorization header, the ?token= query parameter or the
// owner portal's cookie. It
// does not check the key; a missing one makes the request invalid, which
// the venue must refuse.
func authenticate(_ context.Context, in *openapi3filter.AuthenticationInput) error {
	r := in.RequestValidationInput.Request
	switch in.SecurityScheme.Type {
	case "http":
		scheme, _, _ := strings.Cut(r.Header.Get("Authorization"), " ")
		if !strings.EqualFold(scheme, "bearer") {
			return errors.New("no Authorization: Bearer header")
		}
	case "apiKey":
		name := in.SecurityScheme.Name
		switch in.SecurityScheme.In {
		case "query":
			if r.URL.Query().Get(name) == "" {
				return fmt.Errorf("no ?%s=", name)
			}
		case "cookie":
			if _, err := r.Cookie(name); err != nil {
				return fmt.Errorf("no cookie %s", name)
			}
		}
	}
	return nil
}

// checkExchange checks one REST exchange against the document: req with
// its body reqBody, answered status with header and body respBody. It
// returns what does not match, or nil.
func checkExchange(req *http.Request, reqBody []byte, status int, header http.Header, respBody []byte) error {
	spec, err := loadAPISpec()
	if err != nil {
		return err
	}
	ctx := context.Background()
	what := fmt.Sprintf("%s %s -> %d %s", req.Method, req.URL.Path, status, bytes.TrimSpace(respBody))
	route, params, err := spec.router.FindRoute(req)
	if err != nil {
		// Not in the document: the venue must not serve it either.
		if status != http.StatusNotFound && status != http.StatusMethodNotAllowed {
			return fmt.Errorf("%s: the route is not in openapi.json (%v), yet the venue answered", what, err)
		}
		var body any
		if json.Unmarshal(respBody, &body) != nil {
			return fmt.Errorf("%s: the error body is not JSON", what)
		}
		if err := spec.doc.Components.Schemas["Error"].Value.VisitJSON(body, openapi3.EnableJSONSchema2020()); err != nil {
			return fmt.Errorf("%s: the error body does not match openapi.json: %w", what, err)
		}
		return nil
	}
	r2 := req.Clone(ctx)
	r2.Body = io.NopCloser(bytes.NewReader(reqBody))
	opts := &openapi3filter.Options{AuthenticationFunc: authenticate, IncludeResponseStatus: true, MultiError: true}
	in := &openapi3filter.RequestValidationInput{Request: r2, PathParams: params, Route: route, Options: opts}
	var errs []error
	if reqErr := openapi3filter.ValidateRequest(ctx, in); reqErr != nil && status < 400 {
		errs = append(errs, fmt.Errorf("the request is invalid by openapi.json, yet the venue took it: %w", reqErr))
	}
	out := &openapi3filter.ResponseValidationInput{RequestValidationInput: in, Status: status, Header: header, Options: opts}
	out.SetBodyBytes(respBody)
	if err := openapi3filter.ValidateResponse(ctx, out); err != nil {
		errs = append(errs, fmt.Errorf("the answer does not match openapi.json: %w", err))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%s: %w", what, errors.Join(errs...))
	}
	return nil
}

// checkingTransport is an http.RoundTripper that checks every exchange
// with checkExchange and reports a mismatch as an error of t.
type checkingTransport struct {
	t    testing.TB
	next http.RoundTripper
}

func (c checkingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	var reqBody []byte
	if req.Body != nil {
		b, err := io.ReadAll(req.Body)
		req.Body.Close()
		if err != nil {
			return nil, err
		}
		reqBody = b
		req = req.Clone(req.Context())
		req.Body = io.NopCloser(bytes.NewReader(b))
	}
	resp, err := c.next.RoundTrip(req)
	if err != nil {
		return resp, err
	}
	respBody, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		return nil, err
	}
	resp.Body = io.NopCloser(bytes.NewReader(respBody))
	if err := checkExchange(req, reqBody, resp.StatusCode, resp.Header, respBody); err != nil {
		c.t.Errorf("openapi: %v", err)
	}
	return resp, nil
}

// apiClient is an http.Client whose every exchange is checked against the
// OpenAPI document (checkExchange); a mismatch fails t.
func apiClient(t testing.TB) *http.Client {
	return &http.Client{Transport: checkingTransport{t: t, next: http.DefaultTransport}}
}

// checkUpgradeRefusal checks the answer of a socket route that refused the
// upgrade (anything but 101) against the document; a mismatch fails t.
func checkUpgradeRefusal(t testing.TB, url string, resp *http.Response) {
	if resp == nil || resp.StatusCode == http.StatusSwitchingProtocols {
		return
	}
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, "http"+strings.TrimPrefix(url, "ws"), nil)
	if err != nil {
		t.Fatal(err)
	}
	var body []byte
	if resp.Body != nil {
		body, _ = io.ReadAll(resp.Body)
		resp.Body = io.NopCloser(bytes.NewReader(body))
	}
	if err := checkExchange(req, nil, resp.StatusCode, resp.Header, body); err != nil {
		t.Errorf("openapi: %v", err)
	}
}

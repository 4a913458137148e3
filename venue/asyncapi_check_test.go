package venue_test

// Every frame the venue sends on a socket the tests of this package open is
// checked against the AsyncAPI document asyncapi.yaml at the repository
// root (PROTOCOL.md "Lobby socket", "Negotiation socket", "Observe socket",
// "Arena feed"):
// the frame's type must be a message of that socket's channel and the frame
// must match its payload schema. A mismatch fails the test.

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"go.yaml.in/yaml/v4"
)

// asyncSpec is asyncapi.yaml, loaded once: the raw document and, per
// channel, the compiled payload schema of each message by frame type.
type asyncSpec struct {
	doc      map[string]any
	channels map[string]map[string]*jsonschema.Schema // channel -> type -> payload
}

var (
	asyncOnce sync.Once
	asyncDoc  *asyncSpec
	asyncErr  error
)

const asyncURL = "file:///asyncapi.json"

func loadAsyncSpec() (*asyncSpec, error) {
	asyncOnce.Do(func() { asyncDoc, asyncErr = readAsyncSpec(filepath.Join("..", "asyncapi.yaml")) })
	return asyncDoc, asyncErr
}

func readAsyncSpec(path string) (*asyncSpec, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	var y any
	if err := yaml.Unmarshal(raw, &y); err != nil {
		return nil, fmt.Errorf("asyncapi.yaml: %w", err)
	}
	j, err := json.Marshal(y)
	if err != nil {
		return nil, fmt.Errorf("asyncapi.yaml as JSON: %w", err)
	}
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(string(j)))
	if err != nil {
		return nil, err
	}
	m, ok := doc.(map[string]any)
	if !ok {
		return nil, fmt.Errorf("asyncapi.yaml is not an object")
	}
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft7) // the AsyncAPI schema format is a superset of draft 7
	if err := c.AddResource(asyncURL, doc); err != nil {
		return nil, err
	}
	spec := &asyncSpec{doc: m, channels: map[string]map[string]*jsonschema.Schema{}}
	channels, _ := m["channels"].(map[string]any)
	for name, ch := range channels {
		msgs, _ := ch.(map[string]any)["messages"].(map[string]any)
		byType := map[string]*jsonschema.Schema{}
		for mname, mref := range msgs {
			ref, _ := mref.(map[string]any)["$ref"].(string)
			if !strings.HasPrefix(ref, "#/components/messages/") {
				return nil, fmt.Errorf("channel %s message %s: $ref %q", name, mname, ref)
			}
			msgName := strings.TrimPrefix(ref, "#/components/messages/")
			payload, err := c.Compile(asyncURL + ref + "/payload")
			if err != nil {
				return nil, fmt.Errorf("channel %s message %s: %w", name, mname, err)
			}
			typ := asyncMessageType(m, msgName)
			if typ == "" {
				return nil, fmt.Errorf("message %s: its payload has no type const", msgName)
			}
			byType[typ] = payload
		}
		spec.channels[name] = byType
	}
	return spec, nil
}

// asyncMessageType is the const of a message's payload.properties.type.
func asyncMessageType(doc map[string]any, msg string) string {
	var v any = doc
	for _, k := range []string{"components", "messages", msg, "payload", "properties", "type", "const"} {
		o, ok := v.(map[string]any)
		if !ok {
			return ""
		}
		v = o[k]
	}
	s, _ := v.(string)
	return s
}

// channelOf names the asyncapi.yaml channel of a socket URL.
func channelOf(url string) string {
	path := url
	if i := strings.IndexByte(path, '?'); i >= 0 {
		path = path[:i]
	}
	switch {
	case strings.HasSuffix(path, "/ws/observe"):
		return "observe"
	case strings.HasSuffix(path, "/v1/arena/ws"):
		return "arena"
	case strings.Contains(path, "/v1/agents/"):
		return "lobby"
	default:
		return "negotiation"
	}
}

// checkFrame checks one frame the venue sent on channel against the
// document; it returns the mismatch or nil.
func checkFrame(channel string, data []byte) error {
	spec, err := loadAsyncSpec()
	if err != nil {
		return err
	}
	v, err := jsonschema.UnmarshalJSON(strings.NewReader(string(data)))
	if err != nil {
		return fmt.Errorf("%s: the venue sent a frame that is not JSON: %.200s", channel, data)
	}
	typ, _ := v.(map[string]any)["type"].(string)
	schema := spec.channels[channel][typ]
	if schema == nil {
		return fmt.Errorf("%s: frame type %q is not a message of the channel in asyncapi.yaml: %.300s", channel, typ, data)
	}
	if err := schema.Validate(v); err != nil {
		return fmt.Errorf("%s: %s frame does not match asyncapi.yaml: %v\n%.500s", channel, typ, err, data)
	}
	return nil
}

// frameChecker returns the check of every frame the venue sends on the
// socket at url; mismatches are reported as errors of t when t's cleanups
// run (the reader goroutine may outlive the test body).
func frameChecker(t testing.TB, url string) func(data []byte) {
	channel := channelOf(url)
	var mu sync.Mutex
	var bad []error
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		for _, err := range bad {
			t.Errorf("asyncapi: %v", err)
		}
	})
	return func(data []byte) {
		if err := checkFrame(channel, data); err != nil {
			mu.Lock()
			bad = append(bad, err)
			mu.Unlock()
		}
	}
}

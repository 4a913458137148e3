package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

func TestLogFormat(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	log, err := newLoggerTo(&buf, "info", "json")
	if err != nil {
		t.Fatal(err)
	}
	log.Info("venue listening", "addr", "127.0.0.1:8080")
	log.Debug("not at info")
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil || m["msg"] != "venue listening" || m["addr"] != "127.0.0.1:8080" || m["level"] != "INFO" {
		t.Fatalf("json log line %q: %v", buf.String(), err)
	}
	buf.Reset()
	log, _ = newLoggerTo(&buf, "info", "text")
	log.Info("venue listening", "addr", "x")
	if !strings.Contains(buf.String(), `msg="venue listening" addr=x`) {
		t.Fatalf("text log line %q", buf.String())
	}
	if _, err := newLoggerTo(&buf, "info", "xml"); err == nil || !strings.Contains(err.Error(), "--log-format") {
		t.Fatalf("xml: %v", err)
	}
	if _, err := newLoggerTo(&buf, "loud", "text"); err == nil || !strings.Contains(err.Error(), "--log-level") {
		t.Fatalf("loud: %v", err)
	}
}

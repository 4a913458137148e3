package main

import (
	"strings"
	"testing"
)

// TestServeRefusesBadFlags: values the venue cannot run with are refused
// at start, naming the flag.
func TestServeRefusesBadFlags(t *testing.T) {
	good := serveOptions{frameRate: 10, regRate: 10}
	if err := good.check(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		mod  func(*serveOptions)
		flag string
	}{
		{func(o *serveOptions) { o.frameRate = -1 }, "--frames-per-second"},
		{func(o *serveOptions) { o.frameRate = 0 }, "--frames-per-second"},
		{func(o *serveOptions) { o.regRate = -1 }, "--register-per-minute"},
		{func(o *serveOptions) { o.publicURL = "foo" }, "--public-url"},
		{func(o *serveOptions) { o.publicURL = "ftp://x" }, "--public-url"},
		{func(o *serveOptions) { o.publicURL = "https://" }, "--public-url"},
	} {
		o := good
		tc.mod(&o)
		if err := o.check(); err == nil || !strings.Contains(err.Error(), tc.flag) {
			t.Errorf("%+v: %v, want an error naming %s", o, err, tc.flag)
		}
	}
	o := good
	o.publicURL = "https://venue.example.com/base"
	if err := o.check(); err != nil {
		t.Fatal(err)
	}
}

package main

import "github.com/venuehq/venue/bench"

// freeAddr is a loopback HOST:PORT free a moment ago.
func freeAddr() (string, error) { return bench.FreeAddr() }

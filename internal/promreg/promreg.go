// Package promreg registers a package's Prometheus collectors on the
// prometheus.Registerer its constructor was given (never the default
// registry), so two nodes in one process each count their own
// (ARCHITECTURE.md "Packages").
package promreg

import (
	"errors"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
)

// Register registers c on reg and returns it. When reg already holds an
// equal collector (a second hub or bridge on the same registry), that one
// is returned, so both add to the same series. A nil reg registers
// nothing: c counts on its own, served nowhere. Any other registration
// error (the same name with other labels or help) panics, as
// prometheus.MustRegister does: it is a programming error.
func Register[C prometheus.Collector](reg prometheus.Registerer, c C) C {
	if reg == nil {
		return c
	}
	if err := reg.Register(c); err != nil {
		var are prometheus.AlreadyRegisteredError
		if errors.As(err, &are) {
			if existing, ok := are.ExistingCollector.(C); ok {
				return existing
			}
		}
		panic(err)
	}
	return c
}

// NewRegistry is a registry with the Go runtime and process collectors:
// what an admin /metrics serves besides the venue's own series.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

package hub

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/venuehq/venue/internal/promreg"
)

// metrics are the rooms' series, registered on Config.Metrics (the node's
// registry, served at the admin /metrics with the venue's).
type metrics struct {
	scopeBlocks    *prometheus.CounterVec
	outcomes       *prometheus.CounterVec
	timerLateness  prometheus.Histogram
	storeLatency   prometheus.Histogram
	outcomeUnknown prometheus.Counter
	recovered      prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	return &metrics{
		scopeBlocks: promreg.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "venue_scope_blocks_total", Help: "Failed checks of refused binding frames, by check.",
		}, []string{"check"})),
		outcomes: promreg.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "venue_negotiation_outcomes_total", Help: "Negotiations ended, by status.",
		}, []string{"status"})),
		timerLateness: promreg.Register(reg, prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "venue_timer_lateness_seconds", Help: "How late a clock's event was settled after its due time.",
			Buckets: []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 5},
		})),
		storeLatency: promreg.Register(reg, prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "venue_store_update_seconds", Help: "Duration of one room step's store transaction.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2.5, 12),
		})),
		outcomeUnknown: promreg.Register(reg, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "venue_outcome_unknown_total", Help: "Room steps answered outcome_unknown: the commit answer was lost and the store could not be asked.",
		})),
		recovered: promreg.Register(reg, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "venue_recovered_entries_total", Help: "Transcript entries of steps of unknown outcome found landed later and published then.",
		})),
	}
}

package hub

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Metrics of the rooms, served at /metrics with the venue's (process-wide:
// several hubs in one process add to the same series).
var (
	metricScopeBlocks = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "venue_scope_blocks_total", Help: "Failed checks of refused binding frames, by check.",
	}, []string{"check"})
	metricOutcomes = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "venue_negotiation_outcomes_total", Help: "Negotiations ended, by status.",
	}, []string{"status"})
	metricTimerLateness = promauto.NewHistogram(prometheus.HistogramOpts{
		Name: "venue_timer_lateness_seconds", Help: "How late a clock's event was settled after its due time.",
		Buckets: []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 5},
	})
	metricStoreLatency = promauto.NewHistogram(prometheus.HistogramOpts{
		Name: "venue_store_update_seconds", Help: "Duration of one room step's store transaction.",
		Buckets: prometheus.ExponentialBuckets(0.0001, 2.5, 12),
	})
	metricOutcomeUnknown = promauto.NewCounter(prometheus.CounterOpts{
		Name: "venue_outcome_unknown_total", Help: "Room steps answered outcome_unknown: the commit answer was lost and the store could not be asked.",
	})
	metricRecovered = promauto.NewCounter(prometheus.CounterOpts{
		Name: "venue_recovered_entries_total", Help: "Transcript entries of steps of unknown outcome found landed later and published then.",
	})
)

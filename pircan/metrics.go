package pircan

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/venuehq/venue/internal/promreg"
)

// metrics are the bridge's series, registered on Config.Metrics (the
// registry the venue or `venue pircan --http` serves at /metrics).
type metrics struct {
	requests    *prometheus.CounterVec
	errors      *prometheus.CounterVec
	rateLimited *prometheus.CounterVec
	queueDepth  prometheus.Gauge
	dropped     prometheus.Counter
	notify      *prometheus.CounterVec
	followed    prometheus.Gauge
	connects    prometheus.Counter
}

// newMetrics registers the series on reg (nil: on none).
func newMetrics(reg prometheus.Registerer) *metrics {
	return &metrics{
		requests: promreg.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pircan_requests_total", Help: "PIRCAN/1 requests answered, by verb (\"\" when none was read).",
		}, []string{"verb"})),
		errors: promreg.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pircan_errors_total", Help: "PIRCAN/1 ERROR replies, by code.",
		}, []string{"code"})),
		rateLimited: promreg.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pircan_rate_limited_total", Help: "Requests refused by a rate limit: answered (the first of a window) or silent.",
		}, []string{"answer"})),
		queueDepth: promreg.Register(reg, prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "pircan_output_queue_depth", Help: "Lines waiting in the paced output queue.",
		})),
		dropped: promreg.Register(reg, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pircan_dropped_total", Help: "Requests or reply lines dropped because a queue was full.",
		})),
		notify: promreg.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "pircan_notify_total", Help: "NOTIFY lines sent, by type.",
		}, []string{"type"})),
		followed: promreg.Register(reg, prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "pircan_followed_agents", Help: "Agents whose events the bridge follows (their nick shares a channel with it).",
		})),
		connects: promreg.Register(reg, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "pircan_connects_total", Help: "Successful connections to the IRC server.",
		})),
	}
}

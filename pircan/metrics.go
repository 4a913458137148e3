package pircan

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// The bridge's metrics, on the default registry the venue serves at /metrics.
var (
	metricRequests = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "pircan_requests_total", Help: "PIRCAN/1 requests answered, by verb (\"\" when none was read).",
	}, []string{"verb"})
	metricErrors = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "pircan_errors_total", Help: "PIRCAN/1 ERROR replies, by code.",
	}, []string{"code"})
	metricRateLimited = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "pircan_rate_limited_total", Help: "Requests refused by a rate limit: answered (the first of a window) or silent.",
	}, []string{"answer"})
	metricQueueDepth = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "pircan_output_queue_depth", Help: "Lines waiting in the paced output queue.",
	})
	metricDropped = promauto.NewCounter(prometheus.CounterOpts{
		Name: "pircan_dropped_total", Help: "Requests or reply lines dropped because a queue was full.",
	})
	metricNotify = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "pircan_notify_total", Help: "NOTIFY lines sent, by type.",
	}, []string{"type"})
	metricFollowed = promauto.NewGauge(prometheus.GaugeOpts{
		Name: "pircan_followed_agents", Help: "Agents whose events the bridge follows (their nick shares a channel with it).",
	})
	metricConnects = promauto.NewCounter(prometheus.CounterOpts{
		Name: "pircan_connects_total", Help: "Successful connections to the IRC server.",
	})
)

package venue

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promauto"
)

// Metrics served at /metrics (Prometheus text format). They are process-wide:
// several servers in one process (tests) add to the same series.
var (
	metricConnections = promauto.NewGaugeVec(prometheus.GaugeOpts{
		Name: "venue_connections", Help: "Open WebSocket connections by kind (lobby, party, observer).",
	}, []string{"kind"})
	metricFramesIn = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "venue_frames_in_total", Help: "Frames received from sockets by type (invalid: undecodable).",
	}, []string{"type"})
	metricFramesOut = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "venue_frames_out_total", Help: "Frames queued to sockets, by type.",
	}, []string{"type"})
	metricCapRefusals = promauto.NewCounterVec(prometheus.CounterOpts{
		Name: "venue_cap_refusals_total", Help: "Socket upgrades refused (429) at a connection cap, by kind (lobby, party, observer).",
	}, []string{"kind"})
	metricQueueOverflows = promauto.NewCounter(prometheus.CounterOpts{
		Name: "venue_send_queue_overflows_total", Help: "Connections closed with 1013 because their send queue was full.",
	})
)

package wsconn

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/venuehq/venue/internal/promreg"
)

// Metrics are the series of a node's sockets' write side.
type Metrics struct {
	// FramesOut counts frames queued to sockets by type (frameType: a fixed
	// set of labels).
	FramesOut *prometheus.CounterVec
	// QueueOverflows counts connections closed with 1013.
	QueueOverflows prometheus.Counter

	out outCounters // FramesOut's counters by label (countOut)
}

// NewMetrics registers the series on reg (nil: none, they count unseen).
func NewMetrics(reg prometheus.Registerer) *Metrics {
	return &Metrics{
		FramesOut: promreg.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "venue_frames_out_total", Help: "Frames queued to sockets, by type.",
		}, []string{"type"})),
		QueueOverflows: promreg.Register(reg, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "venue_send_queue_overflows_total", Help: "Connections closed with 1013 because their send queue was full.",
		})),
	}
}

package venue

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/venuehq/venue/internal/admin"
	"github.com/venuehq/venue/internal/promreg"
)

// Registry is where a node registers its series and what the admin
// /metrics serves (admin.Registry): a *prometheus.Registry.
type Registry = admin.Registry

// metrics are the sockets' series, on Config.Metrics.
type metrics struct {
	connections    *prometheus.GaugeVec
	framesIn       *prometheus.CounterVec
	framesOut      *prometheus.CounterVec
	capRefusals    *prometheus.CounterVec
	queueOverflows prometheus.Counter
}

func newMetrics(reg prometheus.Registerer) *metrics {
	return &metrics{
		connections: promreg.Register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "venue_connections", Help: "Open WebSocket connections by kind (lobby, party, observer).",
		}, []string{"kind"})),
		framesIn: promreg.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "venue_frames_in_total", Help: "Frames received from sockets by type (invalid: undecodable).",
		}, []string{"type"})),
		framesOut: promreg.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "venue_frames_out_total", Help: "Frames queued to sockets, by type.",
		}, []string{"type"})),
		capRefusals: promreg.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "venue_cap_refusals_total", Help: "Socket upgrades refused (429) at a connection cap, by kind (lobby, party, observer).",
		}, []string{"kind"})),
		queueOverflows: promreg.Register(reg, prometheus.NewCounter(prometheus.CounterOpts{
			Name: "venue_send_queue_overflows_total", Help: "Connections closed with 1013 because their send queue was full.",
		})),
	}
}

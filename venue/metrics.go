package venue

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/venuehq/venue/internal/admin"
	"github.com/venuehq/venue/internal/promreg"
	"github.com/venuehq/venue/internal/wsconn"
)

// Registry is where a node registers its series and what the admin
// /metrics serves (admin.Registry): a *prometheus.Registry.
type Registry = admin.Registry

// metrics are the sockets' series, on Config.Metrics.
type metrics struct {
	connections *prometheus.GaugeVec
	framesIn    *prometheus.CounterVec
	capRefusals *prometheus.CounterVec
	sockets     *wsconn.Metrics // frames out, send queue overflows
}

func newMetrics(reg prometheus.Registerer) *metrics {
	return &metrics{
		connections: promreg.Register(reg, prometheus.NewGaugeVec(prometheus.GaugeOpts{
			Name: "venue_connections", Help: "Open WebSocket connections by kind (lobby, party, observer).",
		}, []string{"kind"})),
		framesIn: promreg.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "venue_frames_in_total", Help: "Frames received from sockets by type (invalid: undecodable).",
		}, []string{"type"})),
		capRefusals: promreg.Register(reg, prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "venue_cap_refusals_total", Help: "Socket upgrades refused (429) at a connection cap, by kind (lobby, party, observer).",
		}, []string{"kind"})),
		sockets: wsconn.NewMetrics(reg),
	}
}

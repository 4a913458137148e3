package venue_test

import (
	"strings"
	"testing"
	"time"

	"github.com/venuehq/venue/grants"
	"github.com/venuehq/venue/store/postgres"
	"github.com/venuehq/venue/store/storetest"
	"github.com/venuehq/venue/venue"
)

// onBackends runs fn on a venue with the embedded store and on one with
// Postgres (a fresh schema).
func onBackends(t *testing.T, fn func(t *testing.T, v *e2eVenue)) {
	t.Run("memory", func(t *testing.T) {
		t.Parallel()
		fn(t, newE2E(t))
	})
	t.Run("postgres", func(t *testing.T) {
		t.Parallel()
		url := storetest.DatabaseURL(t)
		st, err := postgres.New(t.Context(), url, postgres.WithSchema(storetest.Schema(t, url)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(st.Close)
		if _, err := st.Migrate(t.Context()); err != nil {
			t.Fatal(err)
		}
		fn(t, newE2E(t, func(c *venue.Config) { c.Store = st }))
	})
}

func checkNames(sb map[string]any) (names, gots []string) {
	for _, c := range sb["checks"].([]any) {
		m := c.(map[string]any)
		names = append(names, m["check"].(string))
		gots = append(gots, m["got"].(string))
	}
	return names, gots
}

// TestE2ETermsAndGrantKeys: bad flight, usage_rights_days and exclusivity
// are invalid_argument naming the key; the grant keys bounding them fail
// alone and together (after the amount) in one scope_block that only the
// sender sees; terms within them land and are accepted into a deal.
func TestE2ETermsAndGrantKeys(t *testing.T) {
	t.Parallel()
	onBackends(t, func(t *testing.T, v *e2eVenue) {
		brand := v.registerBare("Acme", "brand")
		v.grant(brand, grants.Scope{
			Amount:          &grants.AmountLimit{MaxCents: cents(300000)},
			Flight:          &grants.FlightLimit{NotBefore: "2026-06-01", NotAfter: "2026-06-30"},
			UsageRightsDays: &grants.DaysLimit{Max: days(90)},
			ExclusivityDays: &grants.DaysLimit{Max: days(30)},
			RequiredTerms:   []string{"flight", "category"},
		})
		bouncer := v.register("Letters", "bouncer")
		negID, _, _ := v.match(brand, bouncer, false)
		b, k := v.room(brand, negID, ""), v.room(bouncer, negID, "")
		b.expect("negotiation_started")
		k.expect("negotiation_started")

		for frag, key := range map[string]string{
			`"flight":{"start":"2026-06-30","end":"2026-06-01"}`: "terms.flight",
			`"usage_rights_days":4000`:                           "terms.usage_rights_days",
			`"exclusivity":{"categories":[],"days":3}`:           "terms.exclusivity",
		} {
			b.send(`{"type":"propose_terms","id":"bad","terms":{"amount_usd":100,` + frag + `}}`)
			e := b.expect("error")
			if e["code"] != "invalid_argument" || !strings.Contains(e["message"].(string), key) {
				t.Fatalf("%s: %v", frag, e)
			}
		}
		within := `"category":"primary_slot","flight":{"start":"2026-06-01","end":"2026-06-30"},"usage_rights_days":90,"exclusivity":{"categories":["fintech"],"days":30}`
		tests := []struct {
			terms string
			want  []string
			gots  []string
		}{
			{`"amount_usd":1000,"category":"primary_slot","flight":{"start":"2026-06-01","end":"2026-07-01"}`, []string{"flight"}, []string{"2026-06-01 to 2026-07-01"}},
			{`"amount_usd":1000,` + strings.Replace(within, `"usage_rights_days":90`, `"usage_rights_days":91`, 1), []string{"usage_rights_days"}, []string{"91"}},
			{`"amount_usd":1000,` + strings.Replace(within, `"days":30`, `"days":31`, 1), []string{"exclusivity_days"}, []string{"31"}},
			{`"amount_usd":1000,"flight":{"start":"2026-06-01","end":"2026-06-02"}`, []string{"required_terms"}, []string{"[flight]"}},
			{`"amount_usd":3500,"usage_rights_days":365,"exclusivity":{"categories":["fintech"],"days":60}`,
				[]string{"amount_usd", "flight", "usage_rights_days", "exclusivity_days", "required_terms"},
				[]string{"3500.00", "none", "365", "60", "none"}},
		}
		for i, tt := range tests {
			b.send(`{"type":"propose_terms","id":"p` + string(rune('a'+i)) + `","terms":{` + tt.terms + `}}`)
			sb := b.expect("scope_block")
			names, gots := checkNames(sb)
			if strings.Join(names, ",") != strings.Join(tt.want, ",") || strings.Join(gots, ",") != strings.Join(tt.gots, ",") {
				t.Fatalf("%s: checks %v got %v, want %v %v", tt.terms, names, gots, tt.want, tt.gots)
			}
		}
		k.quiet() // the bouncer learnt nothing of any refusal
		b.send(`{"type":"propose_terms","id":"ok","terms":{"amount_usd":2500,` + within + `}}`)
		b.expect("message_ack")
		m := k.expect("negotiation_message")
		if tm := m["terms"].(map[string]any); tm["usage_rights_days"] != float64(90) || tm["flight"].(map[string]any)["end"] != "2026-06-30" {
			t.Fatalf("relay: %v", m)
		}
		k.send(`{"type":"accept","id":"a1","proposal_id":"` + m["proposal_id"].(string) + `"}`)
		k.expect("message_ack")
		b.expect("negotiation_message") // the accept
		if end := b.expect("negotiation_ended"); end["status"] != "deal" || end["terms"].(map[string]any)["exclusivity"].(map[string]any)["days"] != float64(30) {
			t.Fatalf("end: %v", end)
		}
	})
}

func days(n int) *int { return &n }

// TestE2EEscalationWidensTermKeys: a principal's decision widens the grant
// keys bounding terms like the others: the refused proposal lands after it.
func TestE2EEscalationWidensTermKeys(t *testing.T) {
	t.Parallel()
	onBackends(t, func(t *testing.T, v *e2eVenue) {
		brand := v.registerBare("Acme", "brand")
		v.grant(brand, grants.Scope{UsageRightsDays: &grants.DaysLimit{Max: days(30)}, RequiredTerms: []string{"usage_rights_days"}})
		bouncer := v.register("Letters", "bouncer")
		negID, _, _ := v.match(brand, bouncer, false)
		b, k := v.room(brand, negID, ""), v.room(bouncer, negID, "")
		b.expect("negotiation_started")
		k.expect("negotiation_started")
		proposal := `{"type":"propose_terms","id":"p1","terms":{"amount_usd":100,"usage_rights_days":180}}`
		b.send(proposal)
		if names, _ := checkNames(b.expect("scope_block")); strings.Join(names, ",") != "usage_rights_days" {
			t.Fatalf("checks %v", names)
		}
		b.send(`{"type":"escalate","content":"they want 180 days of usage rights"}`)
		escID := b.expect("message_ack")["escalation_id"].(string)
		now := v.clock.Now()
		tok, err := grants.SignDecision(brand.principal, grants.DecisionClaims{EscalationID: escID, Decision: "approve", Audience: "venue",
			IssuedAt: now, ExpiresAt: now.Add(10 * time.Minute), Grant: &grants.Scope{UsageRightsDays: &grants.DaysLimit{Max: days(365)}}})
		if err != nil {
			t.Fatal(err)
		}
		if code, m := v.do("POST", "/v1/escalations/"+escID+"/decision", "", map[string]any{"token": tok}); code != 200 {
			t.Fatalf("decision: %d %v", code, m)
		}
		b.expect("escalation_resolved")
		b.send(proposal)
		b.expect("message_ack")
	})
}

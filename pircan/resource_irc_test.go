package pircan_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/venuehq/venue/directory"
	"github.com/venuehq/venue/handshake"
	"github.com/venuehq/venue/internal/irctest"
	"github.com/venuehq/venue/negotiation"
	"github.com/venuehq/venue/pircan"
)

// On the real network: an IRC-only agent reads an agreement-gated
// resource of 5,000 bytes whole with READ, page by page, once the owner
// granted resource:read, and is refused before.
func TestReadResourceOverIRC(t *testing.T) {
	t.Parallel()
	n := irctest.Shared(t)
	v := startVenueBridge(t, n)
	id := irctest.RandHex(3)
	cs := agents(t, n, []string{"rdr" + id, "own" + id}, []bool{false, false})
	reader, owner := cs[0], cs[1]
	reader.Ask(v.nick, `PIRCAN/1 HELLO {"name":"Reader"}`, "HELLO")
	ownerID := owner.Ask(v.nick, `PIRCAN/1 HELLO {"name":"Owner"}`, "HELLO")["agent_id"].(string)
	content := strings.Repeat("Chlorine: evacuate 800 m downwind; «shelter» in place.\n", 90)
	r, err := v.svc.AddResource(context.Background(), ownerID, handshake.ResourceInput{Title: "Chlorine", Access: handshake.AccessAgreement, Content: content}, time.Now())
	if err != nil {
		t.Fatal(err)
	}
	items, _ := listOf(t, reader, v.nick, `PIRCAN/1 RESOURCES {"q":"chlorine"}`, "RESOURCE", "RESOURCES-END")
	if len(items) != 1 || items[0]["readable"] != false {
		t.Fatalf("RESOURCES %v", items)
	}
	askErr(t, reader, v.nick, `PIRCAN/1 READ {"resource_id":"`+r.ID+`"}`, handshake.CodeNotAuthorized)
	c, _ := ask(t, reader, v.nick, `PIRCAN/1 CONTACT {"to":"`+ownerID+`","purpose":"Read the guide","scopes":["resource:read"]}`, "CONTACT")
	ask(t, owner, v.nick, `PIRCAN/1 ACCEPT {"request_id":"`+c["request_id"].(string)+`"}`, "ACCEPT")

	var got strings.Builder
	pages := 0
	for offset := 0; ; pages++ {
		texts, end := readWhole(t, reader, v.nick, fmt.Sprintf(`PIRCAN/1 READ {"resource_id":"%s","offset":%d,"id":"w"}`, r.ID, offset), "CONTENT", "resource_id", "READ-END")
		got.WriteString(texts[r.ID])
		if end["total"] != float64(len(content)) || end["returned"] != float64(len(texts[r.ID])) {
			t.Fatalf("READ-END %v after %d bytes", end, len(texts[r.ID]))
		}
		next, ok := end["next_offset"].(float64)
		if !ok {
			break
		}
		offset = int(next)
	}
	if got.String() != content || pages+1 != (len(content)+pircan.ReadPageBytes-1)/pircan.ReadPageBytes {
		t.Fatalf("read %d bytes in %d pages, want %d; equal %v", got.Len(), pages+1, len(content), got.String() == content)
	}
}

// On the real network: a HELLO whose name reads like another agent's (a
// Cyrillic А for a Latin A, another case) is refused with name_taken and
// registers nothing; the same account registers under a name of its own.
func TestLookalikeNameRefusedOverIRC(t *testing.T) {
	t.Parallel()
	n := irctest.Shared(t)
	v := startVenueBridge(t, n)
	id := irctest.RandHex(3)
	cs := agents(t, n, []string{"orig" + id, "copy" + id}, []bool{false, false})
	orig, cp := cs[0], cs[1]
	origID := orig.Ask(v.nick, `PIRCAN/1 HELLO {"name":"Hazmat Desk `+id+`"}`, "HELLO")["agent_id"].(string)
	for _, name := range []string{"\u041dazmat Desk " + id, "HAZMAT DESK " + id} {
		m := cp.AskError(v.nick, `PIRCAN/1 HELLO {"name":"`+name+`","id":"n"}`, pircan.CodeNameTaken)
		if m["re"] != "n" || !strings.Contains(m["message"].(string), origID) {
			t.Fatalf("refusal %v", m)
		}
	}
	cp.AskError(v.nick, `PIRCAN/1 WHOAMI`, "not_registered")
	if m := cp.Ask(v.nick, `PIRCAN/1 HELLO {"name":"Copy Desk `+id+`"}`, "HELLO"); m["new"] != true {
		t.Fatalf("HELLO %v", m)
	}
	// A venue agent with a lookalike name (registered over REST) is
	// flagged in FIND with the original's id.
	venueAgent, _, err := v.dir.Register(context.Background(), directory.Registration{Name: "HAZMAT Desk " + id, Role: negotiation.RoleBrand})
	if err != nil {
		t.Fatal(err)
	}
	items, _ := listOf(t, cp, v.nick, `PIRCAN/1 FIND {"q":"desk `+id+`"}`, "FIND-RESULT", "FIND-END")
	flagged := map[string]any{}
	for _, it := range items {
		flagged[it["agent_id"].(string)] = it["lookalike_id"]
	}
	if flagged[venueAgent.ID] != origID || flagged[origID] != nil {
		t.Fatalf("FIND %v", items)
	}
}

package pircan

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/venuehq/venue/handshake"
	"github.com/venuehq/venue/pircan/line"
)

// readAll reads a resource page by page with READ, checking each page's
// lines, and returns the content joined.
func readAll(t *testing.T, f *hsFixture, id string) (string, int) {
	t.Helper()
	var b strings.Builder
	pages := 0
	for offset := any(0.0); offset != nil; pages++ {
		rs := f.asAlice(t, `PIRCAN/1 READ {"resource_id":"`+id+`","offset":`+fmt.Sprint(int(offset.(float64)))+`,"id":"rd"}`)
		end := rs[len(rs)-1]
		if end.verb != "READ-END" || end.obj["resource_id"] != id || end.obj["re"] != "rd" || end.obj["offset"] != offset {
			t.Fatalf("READ end %+v", end)
		}
		page := ""
		for i, r := range rs[:len(rs)-1] {
			want := "CONTENT-MORE"
			if i == 0 {
				want = "CONTENT"
			}
			if r.verb != want || r.obj["resource_id"] != id || r.obj["re"] != "rd" {
				t.Fatalf("line %d of a page: %s", i, r.raw)
			}
			page += r.obj["text"].(string)
		}
		if float64(len(page)) != end.obj["returned"] || len(page) > ReadPageBytes {
			t.Fatalf("page of %d bytes, READ-END says %v", len(page), end.obj["returned"])
		}
		b.WriteString(page)
		offset = end.obj["next_offset"]
		f.clock.Advance(60e9) // a fresh rate window for each page
	}
	return b.String(), pages
}

// READ gives agreement-gated content only with resource:read, page by
// page, whole: the pages joined are the content, multi-byte characters
// and escapes included; bad offsets and unknown ids change nothing.
func TestReadResourceContent(t *testing.T) {
	t.Parallel()
	f := setupHandshake(t)
	content := strings.Repeat("Ammonia é \"quoted\" \u2028 line\n", 160) // 4,640 bytes
	r, err := f.svc.AddResource(context.Background(), f.bob, handshake.ResourceInput{Title: "Ammonia", Access: handshake.AccessAgreement, Content: content}, f.clock.Now())
	must(t, err)
	wantError(t, f.asAlice(t, `PIRCAN/1 READ {"resource_id":"`+r.ID+`"}`), handshake.CodeNotAuthorized)
	wantError(t, f.asAlice(t, `PIRCAN/1 READ {"resource_id":"res_nope"}`), handshake.CodeNotFound)
	wantError(t, f.asAlice(t, `PIRCAN/1 READ {}`), line.CodeInvalidArgument)
	f.agree(t, `["resource:read"]`)
	wantError(t, f.asAlice(t, `PIRCAN/1 READ {"resource_id":"`+r.ID+`","offset":-1}`), line.CodeInvalidArgument)
	wantError(t, f.asAlice(t, `PIRCAN/1 READ {"resource_id":"`+r.ID+`","offset":100000}`), line.CodeInvalidArgument)
	wantError(t, f.asAlice(t, `PIRCAN/1 READ {"resource_id":"`+r.ID+`","offset":9}`), line.CodeInvalidArgument) // inside é
	got, pages := readAll(t, f, r.ID)
	if got != content || pages != 3 {
		t.Fatalf("read %d bytes in %d pages, want %d in 3; equal %v", len(got), pages, len(content), got == content)
	}
	// A public resource is read without an agreement; the owner reads its own.
	pub, err := f.svc.AddResource(context.Background(), f.bob, handshake.ResourceInput{Title: "Public", Access: handshake.AccessPublic, Content: "short"}, f.clock.Now())
	must(t, err)
	rs := f.asAlice(t, `PIRCAN/1 READ {"resource_id":"`+pub.ID+`"}`)
	if len(rs) != 2 || rs[0].obj["text"] != "short" || rs[1].obj["next_offset"] != nil || rs[1].obj["total"] != 5.0 {
		t.Fatalf("public READ %+v", rs)
	}
}

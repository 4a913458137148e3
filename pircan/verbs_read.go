package pircan

import (
	"fmt"
	"unicode/utf8"

	"github.com/venuehq/venue/pircan/line"
	"github.com/venuehq/venue/store"
)

// ReadPageBytes is the most content one READ returns (PIRCAN.md "Reading
// resources"): about 7 to 10 reply lines, so a 60,000-byte resource is 30
// pages.
const ReadPageBytes = 2000

// read answers READ {"resource_id","offset"}: up to ReadPageBytes bytes of
// a resource's content from byte offset (a character boundary), as a
// CONTENT line and CONTENT-MORE continuation lines (line.Split), then
// READ-END {"resource_id","returned","total","offset","next_offset"}
// (null at the end). Errors: not_found, not_authorized (agreement-gated
// content without resource:read), invalid_argument (an offset past the
// end or inside a character).
func (c *call) read(a store.Agent) {
	var args struct {
		ResourceID string `json:"resource_id"`
		Offset     *int   `json:"offset"`
	}
	if !c.decode(&args) {
		return
	}
	r, err := c.h.hs.ReadResource(c.ctx, a.ID, args.ResourceID, c.h.clock.Now())
	if err != nil {
		c.failHandshake(err)
		return
	}
	offset := deref(args.Offset)
	if offset < 0 || offset > len(r.Content) || (offset < len(r.Content) && !utf8.RuneStart(r.Content[offset])) {
		c.fail(line.CodeInvalidArgument, fmt.Sprintf("offset must be a next_offset of READ, from 0 to %d.", len(r.Content)))
		return
	}
	end := min(offset+ReadPageBytes, len(r.Content))
	for end > offset && end < len(r.Content) && !utf8.RuneStart(r.Content[end]) {
		end--
	}
	c.replyWhole("CONTENT", "resource_id", line.Obj{{Key: "resource_id", Value: r.ID}, {Key: "offset", Value: offset},
		{Key: "text", Value: r.Content[offset:end]}})
	var next any
	if end < len(r.Content) {
		next = end
	}
	c.end("READ-END", end-offset, len(r.Content), offset, line.KV{Key: "resource_id", Value: r.ID}, line.KV{Key: "next_offset", Value: next})
}

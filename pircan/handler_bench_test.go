package pircan

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// BenchmarkHandle: one request through the rate limit, the codec, the
// directory and the fitting of replies (memory store; no IRC).
func BenchmarkHandle(b *testing.B) {
	for _, req := range []string{`PIRCAN/1 ECHO {"text":"hello","id":"r1"}`, `PIRCAN/1 FIND {"q":"agent","limit":10}`} {
		b.Run(req[9:13], func(b *testing.B) {
			f := setup(b)
			f.h.lim.l.PerRequester = 1 << 30
			ctx := context.Background()
			for i := range 100 {
				acct := fmt.Sprintf("a%d", i)
				f.h.handle(ctx, Incoming{Nick: acct, NickKey: acct, Account: acct, AccountKey: acct,
					Text: fmt.Sprintf(`PIRCAN/1 HELLO {"name":"agent %d","description":"an agent","capabilities":["x","y"]}`, i)})
				f.clock.Advance(2 * time.Minute) // past the registration limit's hour in time
			}
			in := Incoming{Nick: "a0", NickKey: "a0", Account: "a0", AccountKey: "a0", Text: req}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				if outs := f.h.handle(ctx, in); len(outs) == 0 {
					b.Fatal("no reply")
				}
			}
		})
	}
}

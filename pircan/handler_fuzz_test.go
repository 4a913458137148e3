package pircan

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/venuehq/venue/pircan/line"
)

// FuzzHandle: whatever a request holds, every line the bridge would send
// is free of CR, LF and NUL, and every reply is one valid line of at most
// 350 bytes.
func FuzzHandle(f *testing.F) {
	for _, s := range []string{
		`PIRCAN/1 HELLO {"name":"a\r\nQUIT","capabilities":["\u0000"],"card_url":"https://x.org/\n"}`,
		"PIRCAN/1 ECHO {\"text\":\"\\r\\nPRIVMSG #x :hi\\u0000\"}", `PIRCAN/1 FIND {"q":"\u2028"}`,
		`PIRCAN/1 JOIN {"channel":"#a\r\nb"}`, "help", "PIRCAN/1 WHOAMI", `PIRCAN/1 CHANNELS {"q":"é"}`,
		"PIRCAN/1 ECHO {\"text\":\"\xff\xfe\"}", `PIRCAN/1 HELLO {"name":"` + strings.Repeat("😀", 80) + `"}`,
	} {
		f.Add(s, "acct")
		f.Add(s, "")
	}
	fx := setup(f)
	ctx := context.Background()
	if err := fx.st.PutChannel(ctx, Channel{Name: "#a", Topic: "t\r\n"}, T0); err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text, account string) {
		fx.clock.Advance(time.Minute) // a fresh rate-limit window each time
		in := Incoming{Nick: "n", NickKey: "n", Account: account, AccountKey: Fold("rfc1459", account), Text: text}
		for _, o := range fx.h.handle(ctx, in) {
			for _, p := range o.Params {
				if strings.ContainsAny(p, "\r\n\x00") {
					t.Fatalf("%s param %q holds CR, LF or NUL", o.Command, p)
				}
			}
			if o.Command == "NOTICE" && strings.HasPrefix(o.Params[1], line.Prefix) && !line.Valid(o.Params[1], line.MaxReplyBytes) {
				t.Fatalf("invalid reply %q", o.Params[1])
			}
		}
	})
}

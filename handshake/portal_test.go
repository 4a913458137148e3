package handshake_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/venuehq/venue/handshake"
)

func TestPortalSignIn(t *testing.T) {
	t.Parallel()
	f := setup(t)
	st, err := f.portal.Start(f.ctx, "10.0.0.1", "Mozilla/5.0 test", t0)
	if err != nil {
		t.Fatal(err)
	}
	if s, _ := f.portal.Status(f.ctx, st.Secret, t0); s.State != handshake.SignInPending || s.Code != st.Code {
		t.Fatalf("status %+v", s)
	}
	_, err = f.portal.Owner(f.ctx, st.Secret, t0)
	wantCode(t, err, "unauthorized")
	// lower case, no dash
	res, err := f.portal.Login(f.ctx, "alice", strings.ToLower(strings.ReplaceAll(st.Code, "-", "")), t0.Add(time.Minute))
	if err != nil {
		t.Fatal(err)
	}
	if res.Account != "alice" || res.Browser != "Mozilla/5.0 test" || !res.ExpiresAt.Equal(t0.Add(time.Minute+12*time.Hour)) {
		t.Fatalf("login %+v", res)
	}
	if acc, err := f.portal.Owner(f.ctx, st.Secret, t0.Add(12*time.Hour)); err != nil || acc != "alice" {
		t.Fatalf("owner %q %v", acc, err)
	}
	// single use
	_, err = f.portal.Login(f.ctx, "mallory", st.Code, t0.Add(2*time.Minute))
	wantCode(t, err, handshake.CodeNotFound)
	// 12 hours
	_, err = f.portal.Owner(f.ctx, st.Secret, t0.Add(time.Minute+12*time.Hour))
	wantCode(t, err, "unauthorized")
	_, err = f.portal.Status(f.ctx, "nope", t0)
	wantCode(t, err, "unauthorized")
}

func TestPortalCodeExpires(t *testing.T) {
	t.Parallel()
	f := setup(t)
	st, _ := f.portal.Start(f.ctx, "10.0.0.1", "b", t0)
	_, err := f.portal.Login(f.ctx, "alice", st.Code, t0.Add(10*time.Minute))
	wantCode(t, err, handshake.CodeNotFound)
	if s, _ := f.portal.Status(f.ctx, st.Secret, t0.Add(10*time.Minute)); s.State != handshake.SignInExpired {
		t.Fatalf("state %+v", s)
	}
	st2, _ := f.portal.Start(f.ctx, "10.0.0.1", "b", t0)
	if _, err := f.portal.Login(f.ctx, "alice", st2.Code, t0.Add(10*time.Minute-time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", "BCDF", "AEIO-UAEI", "BCDF-GHJK-L"} {
		_, err := f.portal.Login(f.ctx, "bob", bad, t0)
		wantCode(t, err, handshake.CodeInvalidArgument)
	}
}

func TestPortalLimits(t *testing.T) {
	t.Parallel()
	t.Run("10 attempts an hour per account", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		st, _ := f.portal.Start(f.ctx, "10.0.0.1", "b", t0)
		for i := range 10 {
			_, err := f.portal.Login(f.ctx, "alice", "BCDF-BCDF", t0.Add(time.Duration(i)*time.Second))
			if code(err) != handshake.CodeNotFound && code(err) != handshake.CodeInvalidArgument {
				t.Fatalf("attempt %d: %v", i, err)
			}
		}
		// The right code now is refused too: the account is over.
		_, err := f.portal.Login(f.ctx, "alice", st.Code, t0.Add(time.Minute))
		wantCode(t, err, handshake.CodeRateLimited)
		// Another account is not.
		if _, err := f.portal.Login(f.ctx, "bob", st.Code, t0.Add(time.Minute)); err != nil {
			t.Fatal(err)
		}
		st2, _ := f.portal.Start(f.ctx, "10.0.0.2", "b", t0.Add(time.Hour))
		if _, err := f.portal.Login(f.ctx, "alice", st2.Code, t0.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("10 starts an hour per address", func(t *testing.T) {
		t.Parallel()
		f := setup(t)
		for i := range 10 {
			if _, err := f.portal.Start(f.ctx, "10.0.0.1", "b", t0.Add(time.Duration(i)*time.Minute)); err != nil {
				t.Fatal(err)
			}
		}
		_, err := f.portal.Start(f.ctx, "10.0.0.1", "b", t0.Add(59*time.Minute))
		wantCode(t, err, handshake.CodeRateLimited)
		if _, err := f.portal.Start(f.ctx, "10.0.0.2", "b", t0.Add(59*time.Minute)); err != nil {
			t.Fatal(err)
		}
		if _, err := f.portal.Start(f.ctx, "10.0.0.1", "b", t0.Add(time.Hour)); err != nil {
			t.Fatal(err)
		}
	})
}

func TestPortalLogout(t *testing.T) {
	t.Parallel()
	f := setup(t)
	var secrets []string
	for i := range 3 {
		st, _ := f.portal.Start(f.ctx, fmt.Sprint(i), "b", t0)
		account := "alice"
		if i == 2 {
			account = "bob"
		}
		if _, err := f.portal.Login(f.ctx, account, st.Code, t0); err != nil {
			t.Fatal(err)
		}
		secrets = append(secrets, st.Secret)
	}
	n, err := f.portal.Logout(f.ctx, "alice", t0.Add(time.Hour))
	if err != nil || n != 2 {
		t.Fatalf("logout %d %v", n, err)
	}
	for i, s := range secrets {
		_, err := f.portal.Owner(f.ctx, s, t0.Add(time.Hour))
		if want := map[bool]string{true: "unauthorized", false: ""}[i < 2]; code(err) != want {
			t.Fatalf("session %d after logout: %v", i, err)
		}
	}
	if n, _ := f.portal.Logout(f.ctx, "alice", t0.Add(time.Hour)); n != 0 {
		t.Fatalf("second logout ended %d", n)
	}
	if err := f.portal.SignOut(f.ctx, secrets[2], t0.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if s, _ := f.portal.Status(f.ctx, secrets[2], t0.Add(time.Hour)); s.State != handshake.SignInEnded {
		t.Fatalf("signed out: %+v", s)
	}
}

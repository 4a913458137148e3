package settlement

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"math"
	"strings"
	"testing"
	"time"
)

func TestMinorUnits(t *testing.T) {
	t.Parallel()
	const maxCents = math.MaxInt64 / MinorPerCent
	tests := []struct {
		cents int64
		minor int64
		err   bool
	}{
		{0, 0, false},
		{1, 10_000, false},                         // one cent
		{99, 990_000, false},                       // 0.99
		{100, 1_000_000, false},                    // one dollar is one USDC
		{320000, 3_200_000_000, false},             // $3,200
		{1_000_000_000, 10_000_000_000_000, false}, // $10,000,000, the largest terms amount
		{maxCents, maxCents * MinorPerCent, false},
		{maxCents + 1, 0, true},
		{math.MaxInt64, 0, true},
		{-1, 0, true},
		{math.MinInt64, 0, true},
	}
	for _, tt := range tests {
		got, err := MinorUnits(tt.cents)
		if (err != nil) != tt.err || got != tt.minor {
			t.Errorf("MinorUnits(%d) = %d, %v; want %d, err %v", tt.cents, got, err, tt.minor, tt.err)
		}
		if err != nil && !errors.Is(err, ErrAmount) {
			t.Errorf("MinorUnits(%d): %v is not ErrAmount", tt.cents, err)
		}
	}
}

func TestFormatMinor(t *testing.T) {
	t.Parallel()
	for minor, want := range map[int64]string{
		0: "0.000000", 1: "0.000001", 10_000: "0.010000", 3_200_000_000: "3200.000000",
		3_200_500_000: "3200.500000", -10_000: "-0.010000",
	} {
		if got := FormatMinor(minor); got != want {
			t.Errorf("FormatMinor(%d) = %q, want %q", minor, got, want)
		}
	}
}

func TestNewAndRecorder(t *testing.T) {
	t.Parallel()
	at := time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)
	in, err := New("neg_0123456789abcdef01234567", "agt_b", "agt_k", 320050, at)
	if err != nil {
		t.Fatal(err)
	}
	if in.ID != "stl_0123456789abcdef01234567" || in.AmountMinor != 3_200_500_000 || in.Status != StatusPending ||
		in.Payer != "agt_b" || in.Payee != "agt_k" {
		t.Fatalf("instruction %+v", in)
	}
	if _, err := New("neg_x", "a", "b", -5, at); !errors.Is(err, ErrAmount) {
		t.Fatalf("negative amount: %v", err)
	}
	var buf bytes.Buffer
	var s Settler = Recorder{Log: slog.New(slog.NewTextHandler(&buf, nil))}
	if err := s.Settle(context.Background(), in); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(buf.String(), "amount_usdc=3200.500000") || !strings.Contains(buf.String(), in.ID) {
		t.Fatalf("log %q", buf.String())
	}
}

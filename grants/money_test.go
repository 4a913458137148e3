package grants

import (
	"errors"
	"testing"
)

func TestParseUSD(t *testing.T) {
	t.Parallel()
	tests := []struct {
		raw     string
		want    int64
		wantErr bool
	}{
		{"3500", 350000, false},
		{"3500.0", 350000, false},
		{"3500.00", 350000, false},
		{"3.5e3", 350000, false},
		{"35E2", 350000, false},
		{"0.01", 1, false},
		{"1e-2", 1, false},
		{"0", 0, false},
		{"-0", 0, false},
		{" 12.5 ", 1250, false},
		{"10000000", 1_000_000_000, false},
		{"10000000.00", 1_000_000_000, false},
		{"10000000.01", 0, true},
		{"1e8", 0, true},
		{"0.001", 0, true},
		{"12.345", 0, true},
		{"12.3450", 0, true},
		{"-1", 0, true},
		{"-0.01", 0, true},
		{`"3500"`, 0, true},
		{"null", 0, true},
		{"true", 0, true},
		{"", 0, true},
		{"01", 0, true},
		{"+1", 0, true},
		{".5", 0, true},
		{"1.", 0, true},
		{"0x10", 0, true},
		{"1/2", 0, true},
		{"NaN", 0, true},
		{"Infinity", 0, true},
		{"1e999999999", 0, true},
		{"1e-999999999", 0, true},
		{"100000000000000000000000000000000000000000000000", 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			t.Parallel()
			got, err := ParseUSD([]byte(tt.raw))
			if tt.wantErr {
				if !errors.Is(err, ErrBadAmount) {
					t.Fatalf("ParseUSD(%s) = %d, %v; want ErrBadAmount", tt.raw, got, err)
				}
				return
			}
			if err != nil || got != tt.want {
				t.Fatalf("ParseUSD(%s) = %d, %v; want %d", tt.raw, got, err, tt.want)
			}
		})
	}
}

func TestFormatUSD(t *testing.T) {
	t.Parallel()
	tests := []struct {
		cents    int64
		want     string
		wantJSON string
	}{
		{0, "0.00", "0"},
		{1, "0.01", "0.01"},
		{10, "0.10", "0.1"},
		{350000, "3500.00", "3500"},
		{350050, "3500.50", "3500.5"},
		{350055, "3500.55", "3500.55"},
		{1_000_000_000, "10000000.00", "10000000"},
		{-5, "-0.05", "-0.05"},
	}
	for _, tt := range tests {
		if got := FormatUSD(tt.cents); got != tt.want {
			t.Errorf("FormatUSD(%d) = %q, want %q", tt.cents, got, tt.want)
		}
		if got := string(usdJSON(tt.cents)); got != tt.wantJSON {
			t.Errorf("usdJSON(%d) = %q, want %q", tt.cents, got, tt.wantJSON)
		}
		if tt.cents >= 0 {
			if back, err := ParseUSD(usdJSON(tt.cents)); err != nil || back != tt.cents {
				t.Errorf("ParseUSD(usdJSON(%d)) = %d, %v", tt.cents, back, err)
			}
		}
	}
}

func TestUSDJSONRoundTrip(t *testing.T) {
	t.Parallel()
	for _, c := range []int64{0, 1, 10, 99, 100, 350000, 350050, 350055, MaxAmountCents} {
		got, err := ParseUSD(USDJSON(c))
		if err != nil || got != c {
			t.Errorf("ParseUSD(USDJSON(%d) = %s) = %d, %v", c, USDJSON(c), got, err)
		}
	}
	if got := string(USDJSON(-5)); got != "-0.05" {
		t.Errorf("USDJSON(-5) = %q, want -0.05", got)
	}
}

func TestFormatDollars(t *testing.T) {
	t.Parallel()
	for cents, want := range map[int64]string{0: "$0.00", 5: "$0.05", -5: "-$0.05", 99_99: "$99.99", 1000_00: "$1,000.00",
		4500_00: "$4,500.00", 999_999_99: "$999,999.99", 10_000_000_00: "$10,000,000.00", -1234_567_89: "-$1,234,567.89"} {
		if got := FormatDollars(cents); got != want {
			t.Errorf("FormatDollars(%d) = %q, want %q", cents, got, want)
		}
	}
}

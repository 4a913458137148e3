// Package settlement holds what a live deal leaves behind for payment
// (PROTOCOL.md "Settlements"): an instruction written in the same
// transaction as the deal (payer the brand, payee the bouncer, the amount in
// USDC minor units, status pending), its statuses after the deal (package
// deliveries moves them: released when the brand approves the delivery,
// disputed, then settled or failed as the Settler reports), and the Settler
// that carries it out. The venue moves no money: the shipped Settler is a
// Recorder, which logs each change and reports a released instruction
// settled at once.
//
// Amounts never pass through floating point: the room keeps integer cents
// and MinorUnits multiplies them into USDC's 6-decimal minor units.
package settlement

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"strings"
	"time"
)

// Decimals of USDC: 1 USDC is 1,000,000 minor units.
const Decimals = 6

// MinorPerCent is how many USDC minor units one US cent is (10^(6-2)).
const MinorPerCent = 10_000

// Status of an instruction (PROTOCOL.md "Settlements"): pending at the
// deal; released when its delivery is approved (by the brand, or by the
// venue after the approval window); disputed when the brand disputes the
// delivery (final at the venue); settled or failed as the Settler reports
// a released one.
const (
	StatusPending  = "pending"
	StatusReleased = "released"
	StatusDisputed = "disputed"
	StatusSettled  = "settled"
	StatusFailed   = "failed"
)

// ErrAmount is MinorUnits' error for a negative amount or one whose minor
// units do not fit in an int64.
var ErrAmount = errors.New("settlement: amount out of range")

// MinorUnits converts integer US cents to USDC minor units (6 decimals):
// cents * 10,000, exactly. Errors: ErrAmount for a negative amount or an
// overflow (over 922,337,203,685,477 cents; the room's terms stop at
// $10,000,000).
func MinorUnits(cents int64) (int64, error) {
	if cents < 0 || cents > math.MaxInt64/MinorPerCent {
		return 0, fmt.Errorf("%w: %d cents", ErrAmount, cents)
	}
	return cents * MinorPerCent, nil
}

// FormatMinor renders minor units as a decimal USDC amount with all six
// decimals ("3200.000000"), for JSON where a number could lose precision.
func FormatMinor(minor int64) string {
	sign := ""
	if minor < 0 {
		sign, minor = "-", -minor
	}
	return fmt.Sprintf("%s%d.%06d", sign, minor/1_000_000, minor%1_000_000)
}

// Instruction is one settlement instruction of a live deal. ID is "stl_"
// followed by the hex of the negotiation id, so a deal has exactly one.
// The receipt that proves the deal is the negotiation's (its jti is the
// negotiation id): GET /v1/negotiations/{id}/receipt.
type Instruction struct {
	ID            string    `json:"settlement_id"`
	NegotiationID string    `json:"negotiation_id"`
	Payer         string    `json:"payer"` // the brand's agent_id
	Payee         string    `json:"payee"` // the bouncer's agent_id
	AmountMinor   int64     `json:"-"`     // USDC minor units
	Status        string    `json:"status"`
	CreatedAt     time.Time `json:"-"`
}

// New builds the pending instruction of a live deal of amountCents.
func New(negotiationID, payer, payee string, amountCents int64, at time.Time) (Instruction, error) {
	minor, err := MinorUnits(amountCents)
	if err != nil {
		return Instruction{}, err
	}
	return Instruction{
		ID: IDFor(negotiationID), NegotiationID: negotiationID, Payer: payer, Payee: payee,
		AmountMinor: minor, Status: StatusPending, CreatedAt: at,
	}, nil
}

// IDFor is the settlement id of a negotiation: "stl_" + the part of the
// negotiation id after "neg_".
func IDFor(negotiationID string) string {
	return "stl_" + strings.TrimPrefix(negotiationID, "neg_")
}

// Settler carries out a settlement instruction after the deal committed,
// and is told of each later change of its status (in.Status: released,
// disputed, settled, failed), once across the nodes, after the change
// committed. At the deal it is called once per live deal, on the node that took the deal, after
// the frame that made the deal was answered and the deal published, off
// that frame's path (hub.Config.Committed): a Settle that blocks delays no
// party, only the settling of later deals and the arena feed, so an
// adapter that moves money still queues the instruction and works it off
// on its own goroutines. An error is logged and the instruction stays
// pending.
type Settler interface {
	Settle(ctx context.Context, in Instruction) error
}

// Report is how a Releaser reports the outcome of a released instruction:
// status settled or failed. Errors: the instruction is not released (it
// was reported already), or the store failed.
type Report func(ctx context.Context, settlementID, status string) error

// Releaser is a Settler that moves money. Given a released instruction
// (after Settle was told of the release) it pays the payee and calls
// report with settled or failed, now or later, from any goroutine. A
// Settler that is not a Releaser leaves released instructions released.
type Releaser interface {
	Release(ctx context.Context, in Instruction, report Report) error
}

// Recorder is the shipped Settler: the instruction is already recorded in
// the store with the deal, so it only logs it and each change. It moves no
// money, and reports a released instruction settled at once.
type Recorder struct {
	Log *slog.Logger // nil: slog.Default()
}

// Settle implements Settler.
func (r Recorder) Settle(_ context.Context, in Instruction) error {
	log := r.Log
	if log == nil {
		log = slog.Default()
	}
	log.Info("settlement recorded (no money moved)", "settlement_id", in.ID, "negotiation_id", in.NegotiationID,
		"payer", in.Payer, "payee", in.Payee, "amount_usdc", FormatMinor(in.AmountMinor), "status", in.Status)
	return nil
}

// Release implements Releaser: no money moves, the instruction is settled.
func (r Recorder) Release(ctx context.Context, in Instruction, report Report) error {
	return report(ctx, in.ID, StatusSettled)
}

// Package receipt holds the venue's signing key and the proofs it signs
// with it (PROTOCOL.md "Registration and auth", "Transcript, offer hash and chain hash"): the receipt, a JWT (EdDSA, `kid` in the
// header, typ receipt+jwt) that the venue signs on every ending of a
// negotiation, the JWKS that publishes the public half at
// /.well-known/jwks.json, and the hash chain of the transcript that a
// receipt commits to through its last seq and head hash.
//
// Everything but [LoadOrCreate] (in keyfile.go, the one place that touches
// the file system) is pure: no I/O, no goroutines, no clock.
package receipt

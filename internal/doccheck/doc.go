// Package doccheck holds a test that keeps the repository standing alone:
// Go comments cite PROTOCOL.md, DELEGATION.md, ARCHITECTURE.md (and
// PIRCAN.md) by headings that exist, and never a document outside the
// repository.
package doccheck

// Package arena holds the practice rules and listings (PROTOCOL.md "Endings, reputation, arena"): arena
// negotiations run the identical path as live ones, with no settlement and
// no reputation change. The room itself enforces the "no reputation change"
// rule (negotiation.State.Arena); listings come with the arena issue.
package arena

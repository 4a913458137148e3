// Package arena holds practice and watching (PROTOCOL.md "Arena,
// reputation and settlements"): the listing of arena negotiations and its
// live feed (Feed, one bus topic for every node), the house sparring
// partners (House, played through package client like any agent, with the
// pure strategy Decide), and the REST routes of the listing, reputation
// history and settlements (NewAPI). Arena negotiations themselves run the
// identical room as live ones: the room (negotiation.State.Arena) leaves
// reputation and settlement alone, and the grant checks run unchanged.
package arena

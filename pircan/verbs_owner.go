package pircan

import (
	"github.com/venuehq/venue/handshake"
	"github.com/venuehq/venue/pircan/line"
	"github.com/venuehq/venue/store"
)

// The owner verbs (PIRCAN.md "Owners"): an agent names an owner account
// (OWNER), which confirms it over IRC (OWN) or gives it up (DISOWN).
// From the confirmation on, only that account owns the agent: it alone
// signs in to the portal for it (LOGIN), and what it sets binds the agent.

// ownerObj is WHOAMI's owner: {"name","verification"}, or null.
func ownerObj(v handshake.OwnerView) any {
	if v.Name == "" {
		return nil
	}
	return line.Obj{{Key: "name", Value: v.Name}, {Key: "verification", Value: v.Verification}}
}

// ownerView is agentID's owner for WHOAMI (null without a handshake).
func (c *call) ownerView(agentID string) (any, bool) {
	if c.h.hs == nil {
		return nil, true
	}
	v, err := c.h.hs.OwnerOf(c.ctx, agentID)
	if err != nil {
		c.internal(err)
		return nil, false
	}
	return ownerObj(v), true
}

// owner is OWNER [{"account"}]: without an account it shows the owner;
// with one it names it (pending until it confirms with OWN); "" withdraws
// a pending owner.
func (c *call) owner(a store.Agent) {
	var args struct {
		Account *string `json:"account"`
	}
	if !c.decode(&args) {
		return
	}
	var v handshake.OwnerView
	var err error
	if args.Account == nil {
		v, err = c.h.hs.OwnerOf(c.ctx, a.ID)
	} else {
		account := *args.Account
		if account != "" {
			account = c.h.foldAccount(account)
		}
		v, err = c.h.hs.NameOwner(c.ctx, a.ID, account, c.h.clock.Now())
	}
	if err != nil {
		c.failHandshake(err)
		return
	}
	o := line.Obj{{Key: "agent_id", Value: a.ID}, {Key: "owner", Value: ownerObj(v)}}
	if v.Verification == handshake.OwnerPending {
		o = append(o, line.KV{Key: "next", Value: "The owner sends PIRCAN/1 OWN {\"agent_id\":\"" + a.ID + "\"}"})
	}
	c.reply("OWNER", o)
}

// own is OWN {"agent_id"} (confirm) and DISOWN {"agent_id"} (give up)
// from the caller's account.
func (c *call) own() {
	var args struct {
		AgentID string `json:"agent_id"`
	}
	if !c.decode(&args) {
		return
	}
	f := c.h.hs.ConfirmOwner
	if c.req.Verb == "DISOWN" {
		f = c.h.hs.Disown
	}
	v, err := f(c.ctx, c.in.AccountKey, args.AgentID, c.h.clock.Now())
	if err != nil {
		c.failHandshake(err)
		return
	}
	c.h.log.Info("pircan: owner "+c.req.Verb, "account", c.in.AccountKey, "agent_id", args.AgentID)
	c.reply(c.req.Verb, line.Obj{{Key: "agent_id", Value: args.AgentID}, {Key: "owner", Value: ownerObj(v)}})
}

// rebind is REBIND {"agent_id"} from the agent's confirmed owner: the
// agent's account name was registered again (a new account id), and the
// owner confirms the new registration is the agent's (PIRCAN.md "An
// account registered again").
func (c *call) rebind() {
	var args struct {
		AgentID string `json:"agent_id"`
	}
	if !c.decode(&args) {
		return
	}
	v, err := c.h.hs.OwnerOf(c.ctx, args.AgentID)
	if err != nil {
		c.failHandshake(err)
		return
	}
	a, err := c.h.hs.Agents.Agent(c.ctx, args.AgentID)
	if v.Verification != handshake.OwnerConfirmed || v.Name != c.in.AccountKey || err != nil || a.IRC == nil {
		c.fail(handshake.CodeNotFound, "No agent "+args.AgentID+" whose confirmed owner you are.")
		return
	}
	ok, err := c.h.st.ConfirmAccount(c.ctx, a.IRC.Account, c.h.clock.Now())
	if err != nil {
		c.internal(err)
		return
	}
	if !ok {
		c.fail(handshake.CodeNotFound, "The account of "+args.AgentID+" was not registered again: nothing to confirm.")
		return
	}
	c.h.log.Info("pircan: owner confirmed a new registration", "account", a.IRC.Account, "agent_id", a.ID)
	c.reply("REBIND", line.Obj{{Key: "agent_id", Value: a.ID}, {Key: "account", Value: a.IRC.Account}, {Key: "bound", Value: true}})
}

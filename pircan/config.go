package pircan

import (
	"encoding/json"
	"fmt"
	"net"
	"os"
	"strings"
)

// Validate checks what Run would refuse, so a command can fail at start:
// Addr is host:port, the CA file (when TLS) holds a PEM certificate, the
// lobby is a channel name, a password goes with the account.
func (c Config) Validate() error {
	if _, _, err := net.SplitHostPort(c.Addr); err != nil {
		return fmt.Errorf("pircan: IRC address %q: want host:port", c.Addr)
	}
	if c.Lobby != "" && !ValidChannelName(c.Lobby) {
		return fmt.Errorf("pircan: lobby %q is not a channel name", c.Lobby)
	}
	if c.Account != "" && c.Password == "" {
		return fmt.Errorf("pircan: the NickServ account %q needs its password (PIRCAN_PASSWORD)", c.Account)
	}
	if c.TLS {
		b := &Bridge{cfg: c}
		if _, err := b.tlsConfig(); err != nil {
			return err
		}
	}
	return nil
}

// ChannelConfig is one channel of a channels file: the operator's way to
// create the channels PIRCAN lists (PIRCAN.md "Channels"). Invite lists
// the agent ids that may join a private channel.
type ChannelConfig struct {
	Name    string   `json:"name"`
	Private bool     `json:"private"`
	Topic   string   `json:"topic"`
	Invite  []string `json:"invite"`
}

// ReadChannels reads a channels file: a JSON array of ChannelConfig.
// Errors name the file and the bad entry; unknown fields are refused.
func ReadChannels(path string) ([]ChannelConfig, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("pircan: channels file: %w", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	var chans []ChannelConfig
	if err := dec.Decode(&chans); err != nil {
		return nil, fmt.Errorf("pircan: channels file %s: %w", path, err)
	}
	for i, c := range chans {
		if err := c.Check(); err != nil {
			return nil, fmt.Errorf("pircan: channels file %s, entry %d: %w", path, i, err)
		}
	}
	return chans, nil
}

// Check checks a channel's name (# and up to 50 characters, no blanks,
// commas or control characters) and topic (up to 300 characters).
func (c ChannelConfig) Check() error {
	if !ValidChannelName(c.Name) {
		return fmt.Errorf("channel name %q: want # and 1-49 characters without blanks, commas or control characters", c.Name)
	}
	if len([]rune(c.Topic)) > 300 {
		return fmt.Errorf("channel %s: topic over 300 characters", c.Name)
	}
	if hasHiddenControls(c.Topic) {
		return fmt.Errorf("channel %s: topic holds control or format characters (bidi, zero-width)", c.Name)
	}
	return nil
}

// Package web will hold the pages embedded in the binary (/arena, the
// spectator view, /owner). None is built yet.
package web

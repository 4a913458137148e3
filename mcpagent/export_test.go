package mcpagent

// SetHooks lets a test wait on signals: waiting is called when a wait
// blocks, done when a tool call ends (with its error). Set before serving.
func SetHooks(a *Agent, waiting func(what string), done func(tool string, err error)) {
	a.hooks = hooks{waiting: waiting, done: done}
}

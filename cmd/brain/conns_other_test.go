//go:build !linux

package main

// The test that sets a descriptor limit, and floods brain with
// connections, runs on Linux only.

const floodEnv = "BRAIN_TEST_FLOOD"

func applyFileLimit() {}

func flood(string) {}

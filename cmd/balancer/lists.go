package main

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/gobalancer/balancer/dispatcher"
)

// Comma-separated flag values. Every element must parse: "1,,2" or "1,x"
// is an error naming the flag, never a silently shorter list.

func splitList(name, s string) ([]string, error) {
	if s == "" {
		return nil, nil
	}
	parts := strings.Split(s, ",")
	for i, p := range parts {
		parts[i] = strings.TrimSpace(p)
		if parts[i] == "" {
			return nil, fmt.Errorf("%s: malformed list %q (empty element)", name, s)
		}
	}
	return parts, nil
}

func parseInts(name, s string) ([]int, error) {
	parts, err := splitList(name, s)
	if err != nil {
		return nil, err
	}
	var out []int
	for _, p := range parts {
		v, err := strconv.Atoi(p)
		if errors.Is(err, strconv.ErrRange) {
			// Only where int is 32 bits can a bound check not say this.
			return nil, fmt.Errorf("%s: %q is out of range (at most %d)", name, p, math.MaxInt)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: malformed list %q (%q is not an integer)", name, s, p)
		}
		out = append(out, v)
	}
	return out, nil
}

func parseFloats(name, s string) ([]float64, error) {
	parts, err := splitList(name, s)
	if err != nil {
		return nil, err
	}
	var out []float64
	for _, p := range parts {
		v, err := strconv.ParseFloat(p, 64)
		if err != nil {
			return nil, fmt.Errorf("%s: malformed list %q (%q is not a number)", name, s, p)
		}
		out = append(out, v)
	}
	return out, nil
}

func parseNames(s string) ([]string, error) {
	parts, err := splitList("-compare", s)
	if err != nil {
		return nil, err
	}
	for i, p := range parts {
		if slices.Contains(parts[:i], p) {
			return nil, fmt.Errorf("-compare: %s is listed twice", p)
		}
	}
	return parts, nil
}

func parseEngines(s string) ([]dispatcher.Engine, error) {
	parts, err := splitList("-engine", s)
	if err != nil {
		return nil, err
	}
	if parts == nil {
		return nil, errors.New("-engine needs a value, e.g. rings or channels,rings")
	}
	var out []dispatcher.Engine
	for _, p := range parts {
		var e dispatcher.Engine
		if err := e.UnmarshalText([]byte(p)); err != nil {
			// The dispatcher's error speaks of options; the user gave a flag.
			return nil, fmt.Errorf("-engine: unknown engine %q (want channels or rings)", p)
		}
		if slices.Contains(out, e) {
			return nil, fmt.Errorf("-engine: %v is listed twice", e)
		}
		out = append(out, e)
	}
	return out, nil
}

func parseSchedules(s string) ([]dispatcher.Schedule, error) {
	parts, err := splitList("-schedule", s)
	if err != nil {
		return nil, err
	}
	if parts == nil {
		return nil, errors.New("-schedule needs a value, e.g. fifo or fifo,priority,deadline,fair")
	}
	var out []dispatcher.Schedule
	for _, p := range parts {
		var sc dispatcher.Schedule
		if err := sc.UnmarshalText([]byte(p)); err != nil {
			// The dispatcher's error speaks of options; the user gave a flag.
			return nil, fmt.Errorf("-schedule: unknown schedule %q (want fifo, priority, deadline or fair)", p)
		}
		if slices.Contains(out, sc) {
			return nil, fmt.Errorf("-schedule: %v is listed twice", sc)
		}
		out = append(out, sc)
	}
	return out, nil
}

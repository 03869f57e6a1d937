package chart

import (
	"fmt"

	"helm.sh/helm/v4/pkg/chart/common/util"
	chartv2 "helm.sh/helm/v4/pkg/chart/v2"
)

// ValuesStrategy says how an upgrade combines the new values with the previous release's.
type ValuesStrategy string

// The strategies of helm upgrade's flags.
const (
	// ValuesDefault reuses the previous release's values only when no new values are given.
	ValuesDefault ValuesStrategy = ""
	// ValuesReset (--reset-values) ignores the previous release's values.
	ValuesReset ValuesStrategy = "reset"
	// ValuesReuse (--reuse-values) merges the new values over the previous ones, and renders with
	// the previous release's chart defaults.
	ValuesReuse ValuesStrategy = "reuse"
	// ValuesResetThenReuse (--reset-then-reuse-values) merges the new values over the previous ones
	// and renders with the new chart's defaults.
	ValuesResetThenReuse ValuesStrategy = "reset-then-reuse"
)

// Previous is what an upgrade needs of the release it upgrades: its chart and the values its
// user supplied (the release record's Config).
type Previous struct {
	Chart  *chartv2.Chart
	Config map[string]any
}

// UpgradeValues combines newVals with the previous release's values under strategy, as Helm v4's
// upgrade does. It returns the chart to render (ch, or for ValuesReuse a copy of ch whose default
// values are the previous release's coalesced values) and the values to render and record. Neither
// ch nor newVals is modified.
func UpgradeValues(ch *chartv2.Chart, prev Previous, newVals map[string]any, strategy ValuesStrategy) (*chartv2.Chart, map[string]any, error) {
	switch strategy {
	case ValuesReset:
		return ch, newVals, nil
	case ValuesReuse:
		if prev.Chart == nil {
			return nil, nil, fmt.Errorf("reuse values: the previous release has no chart")
		}
		oldVals, err := util.CoalesceValues(prev.Chart, prev.Config)
		if err != nil {
			return nil, nil, fmt.Errorf("reuse values: rebuild the previous release's values: %w", err)
		}
		vals := util.CoalesceTables(copyValues(newVals), copyValues(prev.Config))
		withOld := cloneChart(ch)
		withOld.Values = oldVals
		return withOld, vals, nil
	case ValuesResetThenReuse:
		return ch, util.CoalesceTables(copyValues(newVals), copyValues(prev.Config)), nil
	case ValuesDefault:
		if len(newVals) == 0 && len(prev.Config) > 0 {
			return ch, prev.Config, nil
		}
		return ch, newVals, nil
	default:
		return nil, nil, fmt.Errorf("unknown values strategy %q: use reset, reuse or reset-then-reuse", strategy)
	}
}

// ReusesPrevious says whether UpgradeValues, under strategy, keeps values of the previous
// release (prevConfig, its Config) in those it returns.
func ReusesPrevious(newVals, prevConfig map[string]any, strategy ValuesStrategy) bool {
	switch strategy {
	case ValuesReuse, ValuesResetThenReuse:
		return true
	case ValuesDefault:
		return len(newVals) == 0 && len(prevConfig) > 0
	}
	return false
}

// copyValues deep-copies a values tree (maps and slices as YAML and JSON decode them), so that
// Helm's in-place merges leave the caller's values alone.
func copyValues(v map[string]any) map[string]any {
	if v == nil {
		return map[string]any{}
	}
	out := make(map[string]any, len(v))
	for k, x := range v {
		out[k] = copyValue(x)
	}
	return out
}

func copyValue(x any) any {
	switch x := x.(type) {
	case map[string]any:
		return copyValues(x)
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = copyValue(e)
		}
		return out
	default:
		return x
	}
}

package chart

import (
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
)

// BudgetLimit is which limit of a render's budget stopped it.
type BudgetLimit string

const (
	// LimitMemory is the memory the renderer may grow by.
	LimitMemory BudgetLimit = "memory"
	// LimitCPU is the CPU time the renderer may spend.
	LimitCPU BudgetLimit = "cpu"
	// LimitOutput is the bytes of rendered files the renderer may write.
	LimitOutput BudgetLimit = "output"
	// LimitObjects is how many YAML documents the rendered files may hold.
	LimitObjects BudgetLimit = "objects"
	// LimitDeadline is the operation's deadline.
	LimitDeadline BudgetLimit = "deadline"
)

// RenderLimits are the budget of one sandboxed render.
type RenderLimits struct {
	// Memory is what the renderer's address space may grow by, in bytes, above what it holds
	// when it starts (Go's runtime and the berth binary).
	Memory int64
	// CPU is the CPU time (user and system) the renderer may spend, rounded up to a second.
	CPU time.Duration
	// Output is the bytes of rendered files the renderer may write.
	Output int64
	// Objects is how many YAML documents the rendered files may hold.
	Objects int
}

// DefaultRenderLimits are the limits of `berth controller` and of the CLI's sandboxed renders
// unless told otherwise.
func DefaultRenderLimits() RenderLimits {
	return RenderLimits{Memory: 128 << 20, CPU: 10 * time.Second, Output: 32 << 20, Objects: 5000}
}

// DefaultRenderSlots is how many sandboxed renders run at once unless told otherwise.
const DefaultRenderSlots = 2

// RenderBudgetError is a render stopped by a limit of its budget. Once it is returned the
// renderer is gone and costs nothing more.
type RenderBudgetError struct {
	// Chart is the chart's name.
	Chart string
	Limit BudgetLimit
	// Limits are the budget the render ran under; the one named by Limit is the one it passed.
	Limits RenderLimits
}

func (e *RenderBudgetError) Error() string {
	if e.Limit == LimitDeadline {
		return fmt.Sprintf("chart %s: rendering its templates did not finish before the operation's deadline and was stopped", e.Chart)
	}
	return fmt.Sprintf("chart %s: rendering its templates was stopped at its %s limit of %s", e.Chart, e.Limit, e.Value())
}

// Value is the limit that was passed, in its unit.
func (e *RenderBudgetError) Value() string {
	switch e.Limit {
	case LimitMemory:
		return resource.NewQuantity(e.Limits.Memory, resource.BinarySI).String()
	case LimitCPU:
		return e.Limits.CPU.String()
	case LimitOutput:
		return resource.NewQuantity(e.Limits.Output, resource.BinarySI).String() + " of rendered files"
	case LimitObjects:
		return fmt.Sprintf("%d objects", e.Limits.Objects)
	}
	return ""
}

package engine_test

import (
	"github.com/dovetail-sh/dovetail/pkg/engine"
	"github.com/dovetail-sh/dovetail/pkg/engine/enginetest"
)

func checkPlan(in *engine.Input, plan *engine.Plan) []string { return enginetest.CheckPlan(in, plan) }

func describeErrs(errs []string) string { return enginetest.DescribeErrs(errs) }

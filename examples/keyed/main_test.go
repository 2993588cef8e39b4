package main

import (
	"context"
	"testing"

	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestPerKeyOrderIsKept(t *testing.T) {
	inOrder, err := Run(context.Background(), 4, 16, 100)
	require.NoError(t, err)
	require.True(t, inOrder)
}

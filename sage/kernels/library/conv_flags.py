"""Cross-core flag ids of the conv_gemm launch (CrossCoreSetFlag ids 0..10 on Atlas A2)."""

FLAG_AIV = 1        # mode 0: all AIVs of the launch reached the same point
FLAG_READY = 2      # mode 2, AIVs -> their AIC: the next wave of the input is in xq
FLAG_WEIGHTS = 3    # mode 2, AIVs -> their AIC: the tap-major weights (and nothing else) are in GM

"""Resource-allocation scoring shared by NodeResourcesFit and NodeResourcesBalancedAllocation."""

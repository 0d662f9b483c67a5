"""Great Expectations (GX Core 1.x) validation of staging slices."""

#include "CCurl.h"
int sluice_ccurl_placeholder(void) { return 0; }

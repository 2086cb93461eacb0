#ifndef SLUICE_CCURL_H
#define SLUICE_CCURL_H
/* Placeholder: the libcurl declarations Sluice uses are added with the curl transport. */
int sluice_ccurl_placeholder(void);
#endif

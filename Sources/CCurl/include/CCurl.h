#ifndef SLUICE_CCURL_H
#define SLUICE_CCURL_H
/*
 * The few libcurl (7.88) declarations Sluice uses, written by hand: the system has
 * libcurl.so.4 but not its headers. Numbers follow include/curl/curl.h and multi.h.
 * The variadic curl_easy_setopt/curl_easy_getinfo are reached through typed wrappers
 * (shim.c), since Swift cannot call C variadic functions.
 */
#include <stddef.h>
#include <stdint.h>

typedef struct Curl_easy CURL;
typedef struct Curl_multi CURLM;
struct curl_slist;
/* An extra descriptor for curl_multi_poll to wait on (multi.h). */
struct curl_waitfd {
    int fd;
    short events;
    short revents;
};
#define SLUICE_CURL_WAIT_POLLIN 0x0001
typedef int64_t sluice_curl_off_t;

/* CURLcode values the transport maps to its errors. */
#define SLUICE_CURLE_OK 0
#define SLUICE_CURLE_FAILED_INIT 2
#define SLUICE_CURLE_NOT_BUILT_IN 4
#define SLUICE_CURLE_OUT_OF_MEMORY 27
#define SLUICE_CURLE_BAD_FUNCTION_ARGUMENT 43
#define SLUICE_CURLE_UNKNOWN_OPTION 48
#define SLUICE_CURLE_UNSUPPORTED_PROTOCOL 1
#define SLUICE_CURLE_URL_MALFORMAT 3
#define SLUICE_CURLE_COULDNT_RESOLVE_PROXY 5
#define SLUICE_CURLE_COULDNT_RESOLVE_HOST 6
#define SLUICE_CURLE_COULDNT_CONNECT 7
#define SLUICE_CURLE_WEIRD_SERVER_REPLY 8
#define SLUICE_CURLE_HTTP2 16
#define SLUICE_CURLE_PARTIAL_FILE 18
#define SLUICE_CURLE_READ_ERROR 26
#define SLUICE_CURLE_OPERATION_TIMEDOUT 28
#define SLUICE_CURLE_SSL_CONNECT_ERROR 35
#define SLUICE_CURLE_ABORTED_BY_CALLBACK 42
#define SLUICE_CURLE_TOO_MANY_REDIRECTS 47
#define SLUICE_CURLE_GOT_NOTHING 52
#define SLUICE_CURLE_SSL_ENGINE_NOTFOUND 53
#define SLUICE_CURLE_SSL_ENGINE_SETFAILED 54
#define SLUICE_CURLE_SEND_ERROR 55
#define SLUICE_CURLE_RECV_ERROR 56
#define SLUICE_CURLE_SSL_CERTPROBLEM 58
#define SLUICE_CURLE_SSL_CIPHER 59
#define SLUICE_CURLE_PEER_FAILED_VERIFICATION 60
#define SLUICE_CURLE_SSL_ENGINE_INITFAILED 66
#define SLUICE_CURLE_SEND_FAIL_REWIND 65
#define SLUICE_CURLE_SSL_CACERT_BADFILE 77
#define SLUICE_CURLE_SSL_SHUTDOWN_FAILED 80
#define SLUICE_CURLE_SSL_CRL_BADFILE 82
#define SLUICE_CURLE_SSL_ISSUER_ERROR 83
#define SLUICE_CURLE_SSL_PINNEDPUBKEYNOTMATCH 90
#define SLUICE_CURLE_SSL_INVALIDCERTSTATUS 91
#define SLUICE_CURLE_HTTP2_STREAM 92
#define SLUICE_CURLE_SSL_CLIENTCERT 98

/* CURLoption values: LONG base 0, OBJECTPOINT 10000, FUNCTIONPOINT 20000, OFF_T 30000. */
#define SLUICE_CURLOPT_WRITEDATA 10001
#define SLUICE_CURLOPT_URL 10002
#define SLUICE_CURLOPT_USERPWD 10005
#define SLUICE_CURLOPT_READDATA 10009
#define SLUICE_CURLOPT_ERRORBUFFER 10010
#define SLUICE_CURLOPT_WRITEFUNCTION 20011
#define SLUICE_CURLOPT_READFUNCTION 20012
#define SLUICE_CURLOPT_LOW_SPEED_LIMIT 19
#define SLUICE_CURLOPT_LOW_SPEED_TIME 20
#define SLUICE_CURLOPT_HTTPHEADER 10023
#define SLUICE_CURLOPT_HEADERDATA 10029
#define SLUICE_CURLOPT_CUSTOMREQUEST 10036
#define SLUICE_CURLOPT_VERBOSE 41
#define SLUICE_CURLOPT_NOPROGRESS 43
#define SLUICE_CURLOPT_NOBODY 44
#define SLUICE_CURLOPT_UPLOAD 46
#define SLUICE_CURLOPT_XFERINFODATA 10057
#define SLUICE_CURLOPT_SSL_VERIFYPEER 64
#define SLUICE_CURLOPT_CAINFO 10065
#define SLUICE_CURLOPT_HEADERFUNCTION 20079
#define SLUICE_CURLOPT_SSL_VERIFYHOST 81
#define SLUICE_CURLOPT_HTTP_VERSION 84
#define SLUICE_CURLOPT_BUFFERSIZE 98
#define SLUICE_CURLOPT_NOSIGNAL 99
#define SLUICE_CURLOPT_HTTPAUTH 107
#define SLUICE_CURLOPT_INFILESIZE_LARGE 30115
#define SLUICE_CURLOPT_POSTFIELDS 10015
#define SLUICE_CURLOPT_POSTFIELDSIZE_LARGE 30120
#define SLUICE_CURLOPT_TCP_NODELAY 121
#define SLUICE_CURLOPT_CONNECTTIMEOUT_MS 156
#define SLUICE_CURLOPT_USERNAME 10173
#define SLUICE_CURLOPT_PASSWORD 10174
#define SLUICE_CURLOPT_SEEKFUNCTION 20167
#define SLUICE_CURLOPT_SEEKDATA 10168
#define SLUICE_CURLOPT_XFERINFOFUNCTION 20219
#define SLUICE_CURLOPT_EXPECT_100_TIMEOUT_MS 227
#define SLUICE_CURLOPT_PATH_AS_IS 234
#define SLUICE_CURLOPT_UPLOAD_BUFFERSIZE 280

/* CURLINFO values: STRING 0x100000, LONG 0x200000, OFF_T 0x600000. */
#define SLUICE_CURLINFO_EFFECTIVE_URL 0x100001
#define SLUICE_CURLINFO_REDIRECT_URL 0x10001F
#define SLUICE_CURLINFO_RESPONSE_CODE 0x200002
#define SLUICE_CURLINFO_OS_ERRNO 0x200019
#define SLUICE_CURLINFO_SIZE_UPLOAD_T 0x600007
#define SLUICE_CURLINFO_NUM_CONNECTS 0x20001A

/* Option values. */
#define SLUICE_CURL_GLOBAL_ALL 3
#define SLUICE_CURL_HTTP_VERSION_2TLS 4
#define SLUICE_CURLAUTH_BASIC 1L
#define SLUICE_CURLAUTH_ANY (-17L) /* ~CURLAUTH_DIGEST_IE: every scheme libcurl knows */
#define SLUICE_CURLPAUSE_CONT 0
#define SLUICE_CURL_ERROR_SIZE 256

/* Callback return values. */
#define SLUICE_CURL_READFUNC_ABORT 0x10000000
#define SLUICE_CURL_READFUNC_PAUSE 0x10000001
#define SLUICE_CURL_SEEKFUNC_OK 0
#define SLUICE_CURL_SEEKFUNC_FAIL 1
#define SLUICE_CURL_SEEKFUNC_CANTSEEK 2

typedef size_t (*sluice_curl_data_callback)(char *buffer, size_t size, size_t nitems, void *context);
typedef int (*sluice_curl_seek_callback)(void *context, sluice_curl_off_t offset, int origin);
typedef int (*sluice_curl_xferinfo_callback)(void *context, sluice_curl_off_t dltotal, sluice_curl_off_t dlnow,
                                             sluice_curl_off_t ultotal, sluice_curl_off_t ulnow);

/* libcurl functions called directly (not variadic). CURLcode and CURLMcode are C enums: int. */
int curl_global_init(long flags);
CURL *curl_easy_init(void);
void curl_easy_cleanup(CURL *easy);
int curl_easy_pause(CURL *easy, int bitmask);
int curl_easy_perform(CURL *easy);
const char *curl_easy_strerror(int code);
CURLM *curl_multi_init(void);
int curl_multi_add_handle(CURLM *multi, CURL *easy);
int curl_multi_remove_handle(CURLM *multi, CURL *easy);
int curl_multi_cleanup(CURLM *multi);
int curl_multi_perform(CURLM *multi, int *running_handles);
int curl_multi_poll(CURLM *multi, struct curl_waitfd *extra_fds, unsigned int extra_nfds, int timeout_ms, int *numfds);
int curl_multi_wakeup(CURLM *multi);
struct curl_slist *curl_slist_append(struct curl_slist *list, const char *string);
void curl_slist_free_all(struct curl_slist *list);
char *curl_version(void);

/* Typed wrappers over the variadic ones (shim.c). Each returns a CURLcode. */
int sluice_curl_setopt_long(CURL *easy, int option, long value);
int sluice_curl_setopt_pointer(CURL *easy, int option, const void *value);
int sluice_curl_setopt_off_t(CURL *easy, int option, sluice_curl_off_t value);
int sluice_curl_setopt_data_callback(CURL *easy, int option, sluice_curl_data_callback callback);
int sluice_curl_setopt_seek_callback(CURL *easy, sluice_curl_seek_callback callback);
int sluice_curl_setopt_xferinfo_callback(CURL *easy, sluice_curl_xferinfo_callback callback);
int sluice_curl_getinfo_long(CURL *easy, int info, long *value);
int sluice_curl_getinfo_off_t(CURL *easy, int info, sluice_curl_off_t *value);
int sluice_curl_getinfo_string(CURL *easy, int info, const char **value);

/* CURLMoption values and the multi calls the engine makes. */
#define SLUICE_CURLMOPT_MAXCONNECTS 6
int curl_multi_timeout(CURLM *multi, long *timeout_ms);
int sluice_curl_multi_setopt_long(CURLM *multi, int option, long value);

/* Reads the multi handle's next finished transfer: returns 1 with its easy handle and
 * CURLcode, 0 when no transfer finished since the last call. */
int sluice_curl_multi_next_done(CURLM *multi, CURL **easy, int *result);

#endif

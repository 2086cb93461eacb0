#include "CCurl.h"

/* The variadic libcurl entry points and the message struct, as libcurl declares them. */
int curl_easy_setopt(CURL *easy, int option, ...);
int curl_easy_getinfo(CURL *easy, int info, ...);

typedef struct {
    int msg; /* CURLMSG: 1 is CURLMSG_DONE */
    CURL *easy_handle;
    union {
        void *whatever;
        int result;
    } data;
} sluice_curl_message;

sluice_curl_message *curl_multi_info_read(CURLM *multi, int *msgs_in_queue);

int sluice_curl_setopt_long(CURL *easy, int option, long value) {
    return curl_easy_setopt(easy, option, value);
}

int sluice_curl_setopt_pointer(CURL *easy, int option, const void *value) {
    return curl_easy_setopt(easy, option, value);
}

int sluice_curl_setopt_off_t(CURL *easy, int option, sluice_curl_off_t value) {
    return curl_easy_setopt(easy, option, value);
}

int sluice_curl_setopt_data_callback(CURL *easy, int option, sluice_curl_data_callback callback) {
    return curl_easy_setopt(easy, option, callback);
}

int sluice_curl_setopt_seek_callback(CURL *easy, sluice_curl_seek_callback callback) {
    return curl_easy_setopt(easy, SLUICE_CURLOPT_SEEKFUNCTION, callback);
}

int sluice_curl_setopt_xferinfo_callback(CURL *easy, sluice_curl_xferinfo_callback callback) {
    return curl_easy_setopt(easy, SLUICE_CURLOPT_XFERINFOFUNCTION, callback);
}

int sluice_curl_getinfo_long(CURL *easy, int info, long *value) {
    return curl_easy_getinfo(easy, info, value);
}

int sluice_curl_getinfo_off_t(CURL *easy, int info, sluice_curl_off_t *value) {
    return curl_easy_getinfo(easy, info, value);
}

int sluice_curl_getinfo_string(CURL *easy, int info, const char **value) {
    return curl_easy_getinfo(easy, info, value);
}

int curl_multi_setopt(CURLM *multi, int option, ...);

int sluice_curl_multi_setopt_long(CURLM *multi, int option, long value) {
    return curl_multi_setopt(multi, option, value);
}

int sluice_curl_multi_next_done(CURLM *multi, CURL **easy, int *result) {
    int queued = 0;
    sluice_curl_message *message;
    while ((message = curl_multi_info_read(multi, &queued)) != NULL) {
        if (message->msg == 1) {
            *easy = message->easy_handle;
            *result = message->data.result;
            return 1;
        }
    }
    return 0;
}

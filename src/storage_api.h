/*
 * storage_api.h - Storage API handlers (/1/, /1.0/, /1.1/ <user>/...).
 * Each handler's comment lists the statuses and Weave codes it answers.
 */
#ifndef WEAVE_STORAGE_API_H
#define WEAVE_STORAGE_API_H

#include "request.h"
#include "response.h"

int storage_info_collections(struct request *req, struct response *resp);
int storage_info_collection_counts(struct request *req, struct response *resp);
int storage_info_quota(struct request *req, struct response *resp);
int storage_info_collection_usage(struct request *req, struct response *resp);

/* 400 1: a known path with a method it does not take, or an unknown info/ name. */
int storage_illegal_method(struct request *req, struct response *resp);
/* 400 11: a function other than info or storage. */
int storage_unsupported_function(struct request *req, struct response *resp);



int storage_get_collection(struct request *req, struct response *resp);
int storage_get_record(struct request *req, struct response *resp);
int storage_put_record(struct request *req, struct response *resp);
int storage_post_collection(struct request *req, struct response *resp);
int storage_delete_collection(struct request *req, struct response *resp);
int storage_delete_record(struct request *req, struct response *resp);
int storage_delete_all(struct request *req, struct response *resp);
#endif
